// The agent desk: the hand-off queue, one conversation, reply, resolve; the gap report for
// admin keys. Plain JS, no build step, same origin and CSP as the chat page.
"use strict";
const desk = { key: null, session: null };
const $ = (id) => document.getElementById(id);

function showError(text) {
  $("error").textContent = text;
  $("error").hidden = !text;
}

async function call(path, body) {
  let response;
  try {
    response = await fetch(path, {
      method: body === undefined ? "GET" : "POST",
      headers: { "Content-Type": "application/json", "Authorization": "Bearer " + desk.key },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new Error("The support service cannot be reached.");
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error((data.error && data.error.message) || "Request failed: " + response.status);
    error.status = response.status;
    throw error;
  }
  return data;
}

function item(className, label, text) {
  const entry = document.createElement("li");
  entry.className = className;
  const who = document.createElement("strong");
  who.textContent = label + ": ";
  const body = document.createElement("span");
  body.textContent = text;
  entry.append(who, body);
  return entry;
}

async function loadQueue() {
  const { handoffs } = await call("/v1/handoffs");
  const list = $("queue");
  list.replaceChildren();
  for (const row of handoffs) {
    const entry = document.createElement("li");
    const open = document.createElement("button");
    open.type = "button";
    const first = (row.turns.find((t) => t.user) || { user: "(no message)" }).user;
    open.textContent = `${first.slice(0, 80)} (${row.session.handoff_reason}; ` +
                       `${row.waiting} waiting)`;
    open.addEventListener("click", () => openConversation(row.session.session_id));
    entry.append(open);
    list.append(entry);
  }
  $("queue-empty").hidden = handoffs.length > 0;
  $("queue-section").hidden = false;
}

async function openConversation(sessionId) {
  const data = await call(`/v1/handoffs/${sessionId}`);
  desk.session = sessionId;
  $("conversation-meta").textContent = `Customer ${data.session.customer_id}, ` +
    `handed off: ${data.session.handoff_reason || "-"}, status: ${data.session.status}`;
  const transcript = $("transcript");
  transcript.replaceChildren();
  for (const turn of data.turns) {
    if (turn.user) {
      const waiting = turn.status === "waiting_for_agent" ? " (waiting for you)" : "";
      transcript.append(item("user", "Customer" + waiting, turn.user));
    }
    if (turn.from === "agent") transcript.append(item("agent", `Agent ${turn.agent}`, turn.answer));
    else if (turn.answer) {
      const sources = (turn.citations || []).length ? ` [${turn.citations.join(", ")}]` : "";
      transcript.append(item("assistant", `Assistant (${turn.verdict})`, turn.answer + sources));
    }
  }
  const entities = $("entities");
  entities.replaceChildren();
  for (const e of data.entities) {
    entities.append(Object.assign(document.createElement("li"),
                                  { textContent: `${e.type} ${e.value}` }));
  }
  $("conversation-section").hidden = false;
}

async function loadGaps() {
  const report = await call("/v1/reports/gaps");
  const list = $("gaps");
  list.replaceChildren();
  const largest = Math.max(1, ...report.clusters.map((c) => c.size));
  for (const cluster of report.clusters.slice(0, 10)) {
    const entry = document.createElement("li");
    const bar = Object.assign(document.createElement("meter"),
                              { min: 0, max: largest, value: cluster.size });
    bar.setAttribute("aria-label", `${cluster.size} questions`);
    const near = cluster.nearest_article ? ` (nearest article: ${cluster.nearest_article.source_id})` : "";
    const text = Object.assign(document.createElement("span"),
      { textContent: ` ${cluster.size} × ${cluster.examples.join(" / ")}${near}` });
    entry.append(bar, text);
    list.append(entry);
  }
  $("gaps-section").hidden = false;
}

function guarded(handler) {
  return async (event) => {
    event.preventDefault();
    try {
      await handler();
      showError("");
    } catch (err) { showError(err.message); }
  };
}

$("key-form").addEventListener("submit", guarded(async () => {
  desk.key = $("api-key").value.trim();
  const me = await call("/v1/me");
  await loadQueue();
  $("key-form").hidden = true;
  if (me.role === "admin") await loadGaps(); // agent keys do not see the report
  setInterval(() => loadQueue().catch((err) => showError(err.message)), 10000);
}));

$("reply").addEventListener("submit", guarded(async () => {
  const text = $("reply-text").value.trim();
  if (!text) return;
  await call(`/v1/sessions/${desk.session}/agent-messages`, { message: text });
  $("reply-text").value = "";
  await openConversation(desk.session);
}));

$("resolve").addEventListener("submit", guarded(async () => {
  await call(`/v1/sessions/${desk.session}/resolve`, { note: $("resolve-note").value.trim() });
  $("resolve-note").value = "";
  $("conversation-section").hidden = true;
  await loadQueue();
}));
