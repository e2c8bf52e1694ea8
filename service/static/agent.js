// The agent desk: the hand-off queue, one conversation, reply, resolve; the gap report for
// admin keys. Plain JS, no build step, same origin and CSP as the chat page.
"use strict";
const desk = { key: null, me: null, session: null, offset: 0, etag: null };
const PAGE = 20;
const $ = (id) => document.getElementById(id);

function showError(text) {
  $("error").textContent = text;
  $("error").hidden = !text;
}

async function call(path, body, extraHeaders) {
  let response;
  try {
    response = await fetch(path, {
      method: body === undefined ? "GET" : "POST",
      headers: { "Content-Type": "application/json", "Authorization": "Bearer " + desk.key,
                 ...(extraHeaders || {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new Error("The support service cannot be reached.");
  }
  if (response.status === 304) return null; // nothing changed since the last poll
  desk.lastEtag = response.headers.get("ETag");
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

// The queue a page at a time, oldest first; polls send the last ETag and get 304 when the
// queue has not changed.
async function loadQueue(force) {
  const page = await call(`/v1/handoffs?limit=${PAGE}&offset=${desk.offset}`, undefined,
                          force || !desk.etag ? {} : { "If-None-Match": desk.etag });
  if (page === null) return;
  desk.etag = desk.lastEtag;
  const list = $("queue");
  list.replaceChildren();
  for (const row of page.handoffs) {
    const entry = document.createElement("li");
    const open = document.createElement("button");
    open.type = "button";
    const first = row.first_message || "(no message)";
    const holder = row.session.taken_by ? `taken by ${row.session.taken_by}` : "nobody has it";
    open.textContent = `${first.slice(0, 80)} (${row.session.handoff_reason}; ` +
                       `${row.waiting} waiting; ${holder})`;
    open.addEventListener("click", guarded(() => openConversation(row.session.session_id)));
    entry.append(open);
    list.append(entry);
  }
  const shown = page.handoffs.length;
  $("queue-count").textContent = page.total ?
    `${page.offset + 1}-${page.offset + shown} of ${page.total} waiting, oldest first` : "";
  $("queue-newer").hidden = page.offset + shown >= page.total;
  $("queue-older").hidden = page.offset === 0;
  $("queue-empty").hidden = page.total > 0;
  $("queue-section").hidden = false;
}

async function openConversation(sessionId) {
  const data = await call(`/v1/handoffs/${sessionId}`);
  desk.session = sessionId;
  const holder = data.session.taken_by;
  $("conversation-meta").textContent = `Customer ${data.session.customer_id}, ` +
    `handed off: ${data.session.handoff_reason || "-"}, status: ${data.session.status}, ` +
    (holder ? `taken by ${holder}` : "nobody has taken it yet");
  const mine = holder === desk.me.key;
  $("take").hidden = mine;
  $("reply").hidden = !mine;
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
    if (event) event.preventDefault();
    try {
      await handler();
      showError("");
    } catch (err) { showError(err.message); }
  };
}

$("key-form").addEventListener("submit", guarded(async () => {
  desk.key = $("api-key").value.trim();
  desk.me = await call("/v1/me");
  await loadQueue(true);
  $("key-form").hidden = true;
  if (desk.me.role === "admin") await loadGaps(); // agent keys do not see the report
  setInterval(() => loadQueue(false).catch((err) => showError(err.message)), 10000);
}));

$("queue-newer").addEventListener("click", guarded(async () => {
  desk.offset += PAGE;
  await loadQueue(true);
}));

$("queue-older").addEventListener("click", guarded(async () => {
  desk.offset = Math.max(0, desk.offset - PAGE);
  await loadQueue(true);
}));

$("take").addEventListener("click", guarded(async () => {
  await call(`/v1/handoffs/${desk.session}/take`, {});
  await openConversation(desk.session);
  await loadQueue(true);
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
  await loadQueue(true);
}));
