// The pilot's chat page: plain JS, no build step. Talks to /v1/sessions on the same origin.
"use strict";
const state = { key: null, session: null, seenReplies: new Set(), polling: null };
const POLL_MS = 3000;
const $ = (id) => document.getElementById(id);
const UNREACHABLE = "The support service cannot be reached. Check your connection and try again.";

function showError(text) {
  const banner = $("error");
  banner.textContent = text;
  banner.hidden = !text;
}

async function api(path, body) {
  let response;
  try {
    response = await fetch(path, {
      method: body === undefined ? "GET" : "POST",
      headers: { "Content-Type": "application/json", "Authorization": "Bearer " + state.key },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new Error(UNREACHABLE);
  }
  return readJson(response);
}

// A JSON answer: the error's message when it failed (a 503 may still carry a turn's result).
async function readJson(response) {
  const data = await response.json().catch(() => ({}));
  if (!response.ok && !(response.status === 503 && data.result)) {
    throw new Error((data.error && data.error.message) || ("Request failed: " + response.status));
  }
  return data.result || data;
}

// One turn over server-sent events: onStep(label) as each step starts, then the result.
async function askStreaming(path, body, onStep) {
  let response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Accept": "text/event-stream",
                 "Authorization": "Bearer " + state.key },
      body: JSON.stringify(body),
    });
  } catch (err) {
    throw new Error(UNREACHABLE);
  }
  const type = response.headers.get("Content-Type") || "";
  if (!type.startsWith("text/event-stream") || !response.body) return readJson(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = {};
      for (const line of block.split("\n")) {
        const colon = line.indexOf(": ");
        if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 2);
      }
      const data = JSON.parse(fields.data || "{}");
      if (fields.event === "step") onStep(data.label);
      else if (fields.event === "result") return data;
      else if (fields.event === "error") {
        if (data.result) return data.result;
        throw new Error((data.error && data.error.message) || "The turn failed.");
      }
    }
  }
  throw new Error("The answer was cut off. Please try again.");
}

function addMessage(role, text) {
  const item = document.createElement("li");
  item.className = role;
  const who = document.createElement("strong");
  who.textContent = { user: "You: ", agent: "Support team (a person): " }[role] || "Support: ";
  const body = document.createElement("span");
  body.textContent = text;
  item.append(who, body);
  $("messages").append(item);
  return item;
}

// Only http(s) links become clickable; anything else (javascript:, data:, ...) is shown as text.
function safeUrl(value) {
  if (typeof value !== "string" || !value) return null;
  try {
    const url = new URL(value, window.location.href);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

function addCitations(item, citations) {
  if (!citations.length) return;
  const list = document.createElement("ol");
  list.className = "citations";
  list.setAttribute("aria-label", "Sources");
  for (const c of citations) {
    const entry = document.createElement("li");
    const url = safeUrl(c.url);
    const link = document.createElement(url ? "a" : "span");
    if (url) { link.href = url; link.target = "_blank"; link.rel = "noopener noreferrer"; }
    link.textContent = c.title || c.source_id;
    entry.append(link);
    list.append(entry);
  }
  item.append(list);
}

function addFeedback(item, turnIndex) {
  const box = document.createElement("div");
  box.className = "feedback";
  for (const [rating, label] of [["up", "Helpful"], ["down", "Not helpful"]]) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.addEventListener("click", async () => {
      try {
        await api(`/v1/sessions/${state.session}/feedback`, { turn_index: turnIndex, rating });
        box.replaceChildren(Object.assign(document.createElement("span"),
          { className: "thanks", textContent: "Thanks for your feedback." }));
      } catch (err) { showError(err.message); }
    });
    box.append(button);
  }
  item.append(box);
}

// After a hand-off, a person's replies arrive in the session: poll for them.
async function showAgentReplies() {
  const session = await api(`/v1/sessions/${state.session}`);
  for (const turn of session.turns) {
    if (turn.from === "agent" && !state.seenReplies.has(turn.turn_index)) {
      state.seenReplies.add(turn.turn_index);
      addMessage("agent", turn.answer);
    }
  }
}

function waitForPeople() {
  if (state.polling) return;
  state.polling = setInterval(() => showAgentReplies().catch((err) => showError(err.message)),
                              POLL_MS);
}

$("key-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  state.key = $("api-key").value.trim();
  try {
    const created = await api("/v1/sessions", {});
    state.session = created.session_id;
    showError("");
    $("key-form").hidden = true;
    $("ask").hidden = false;
    $("question").focus();
  } catch (err) { showError(err.message); }
});

$("ask").addEventListener("submit", async (event) => {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  addMessage("user", question);
  $("question").value = "";
  $("send").disabled = true;
  try {
    const progress = document.createElement("li");
    progress.className = "progress";
    progress.setAttribute("role", "status");
    progress.textContent = "Working on it…";
    $("messages").append(progress);
    let result;
    try {
      result = await askStreaming(`/v1/sessions/${state.session}/messages`,
                                  { message: question },
                                  (label) => { progress.textContent = label + "…"; });
    } finally {
      progress.remove();
    }
    showError("");
    const item = addMessage("assistant", result.answer);
    item.dataset.verdict = result.verdict;
    addCitations(item, result.citations || []);
    if (result.verdict === "answered" && result.turn_index !== null) {
      addFeedback(item, result.turn_index);
    }
    if (result.handoff) {
      $("handoff").hidden = false;
      waitForPeople();
    }
  } catch (err) {
    showError(err.message);
  } finally {
    $("send").disabled = false;
    $("question").focus();
  }
});

$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("ask").requestSubmit();
  }
});
