// The agent desk: the hand-off queue, one conversation, take, reply, resolve (the reports
// are the lead's page, /lead). Plain JS, no build step, same origin and CSP as the chat page.
"use strict";
const desk = { me: null, session: null, offset: 0, etag: null, page: null, rowState: null, opening: 0 };
const PAGE = 20;
const POLL_MS = 10000;
const { $, call, element, ago, guarded, showError } = Staff;

// The queue a page at a time, oldest first; polls send the last ETag and get 304 when the
// queue has not changed. The page when it was read again, else null.
async function loadQueue(force) {
  const page = await call(`/v1/handoffs?limit=${PAGE}&offset=${desk.offset}`, undefined,
                          force || !desk.etag ? {} : { "If-None-Match": desk.etag });
  if (page === null) return null;
  desk.page = page;
  desk.etag = Staff.lastEtag;
  const list = $("queue");
  list.replaceChildren();
  for (const row of page.handoffs) list.append(queueEntry(row));
  const shown = page.handoffs.length;
  // "3 waiting" when they all fit on this page, "21-40 of 45 waiting" when they do not
  $("queue-count").textContent = !page.total ? ""
    : page.total === shown ? `${page.total} waiting${page.total === 1 ? "" : ", oldest first"}`
    : `${page.offset + 1}-${page.offset + shown} of ${page.total} waiting, oldest first`;
  $("queue-newer").hidden = page.offset + shown >= page.total;
  $("queue-older").hidden = page.offset === 0;
  $("queue-empty").hidden = page.total > 0;
  $("queue-section").hidden = false;
  return page;
}

// What the open conversation's queue row says changes when the customer writes again or
// someone takes it (null: it left this page of the queue).
function rowState(page, sessionId) {
  const row = page && page.handoffs.find((r) => r.session.session_id === sessionId);
  return row ? JSON.stringify([row.waiting, row.session.taken_by, row.problem]) : null;
}

// A poll: the queue, and the open conversation when its own row changed: the agent never
// answers an old state, and other rows changing cost no suggestion. The reply being typed
// stays as it is.
async function poll() {
  const page = await loadQueue(false);
  const open = desk.session;
  if (!page || !open || rowState(page, open) === desk.rowState) return;
  try {
    await openConversation(open, true);
  } catch (err) {
    if (err.status !== 403 && err.status !== 404) throw err;
    if (desk.session === open) {
      closeConversation("That conversation left the queue: someone else took it, it was " +
                        "resolved or closed, or the customer left it.");
    }
  }
}

function closeConversation(note) {
  $("desk-done").textContent = note;
  $("desk-done").hidden = false;
  $("conversation-section").hidden = true;
  desk.session = null;
  for (const button of $("queue").querySelectorAll("button.row")) markOpened(button);
}

// One queue row: the customer's problem (the question that led to the hand-off) first, an
// urgency flag saying why, then why it was handed off, their latest message, since when (the
// clock time too: two customers' rows never read the same), who has it and their email.
function queueEntry(row) {
  const clip = (text, width) => (text.length > width ? text.slice(0, width - 1) + "…" : text);
  // only the customer's own words are quoted: with nothing written (the button at once) the
  // service falls back to the hand-off's reason, which the "Handed off:" line says
  const reason = row.session.handoff_reason;
  const problem = row.problem !== reason ? row.problem : "";
  const why = row.why && row.why !== problem ? row.why : "";
  const holder = row.session.taken_by ? `taken by ${row.session.taken_by}` : "nobody has it";
  const since = row.session.handoff_at || row.session.created;
  const clock = new Date(since * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const unanswered = row.waiting ?
    `; ${row.waiting} later message${row.waiting === 1 ? "" : "s"} unanswered` : "";
  const open = element("button", { type: "button", className: "row" },
    element("span", { className: "problem" }, element("strong", {}, row.customer),
            problem ? `: “${clip(problem, 160)}”` : " (no message yet)"));
  if (row.urgent) {
    open.append(element("span", { className: "flag urgent" }, `Urgent: ${row.urgent_why}`));
  }
  if (why) open.append(element("span", { className: "meta" }, `Handed off: ${clip(why, 120)}`));
  const latest = row.latest_message;
  if (latest && latest !== problem && latest !== why) {
    open.append(element("span", { className: "meta" }, `Latest: “${clip(latest, 120)}”`));
  }
  open.append(element("span", { className: "meta" },
                      `(handed off at ${clock}, waiting ${ago(since)}${unanswered}; ${holder})`));
  if (row.session.contact_email) {
    open.append(element("span", { className: "meta" }, `Email: ${row.session.contact_email}`));
  }
  open.dataset.session = row.session.session_id;
  markOpened(open);
  open.addEventListener("click", guarded(() => openConversation(row.session.session_id)));
  return element("li", {}, open);
}

// The row of the conversation that is open is highlighted (and says so to a screen reader).
function markOpened(button) {
  const opened = button.dataset.session === desk.session;
  button.classList.toggle("opened", opened);
  if (opened) button.setAttribute("aria-current", "true");
  else button.removeAttribute("aria-current");
}

function showSuggestion(suggestion) {
  $("suggestion").hidden = !suggestion;
  if (!suggestion) return;
  $("suggestion-for").textContent = `To: “${suggestion.message}”` +
    (suggestion.verdict === "suggest" ? " (an article that may help, not a direct answer)" : "");
  $("suggestion-text").textContent = suggestion.answer;
  const sources = $("suggestion-sources");
  sources.replaceWith(Object.assign(SupportcrewChat.sourceList(suggestion.citations),
                                    { id: "suggestion-sources" }));
  // "Use this reply" keeps the answer's [n] markers meaning something: its sources, numbered
  const cited = suggestion.citations.map((c, i) =>
    `[${i + 1}] ${c.title || c.source_id}${c.url ? ": " + c.url : ""}`);
  desk.suggestion = suggestion.answer + (cited.length ? "\n\nSources:\n" + cited.join("\n") : "");
}

// Show a conversation; ``refresh``: read the open one again (shown only while it is still the
// open one: a click on another row or a resolve during the read wins).
async function openConversation(sessionId, refresh = false) {
  const asked = ++desk.opening;
  const data = await call(`/v1/handoffs/${sessionId}`);
  if (asked !== desk.opening || (refresh && desk.session !== sessionId)) return;
  if (sessionId !== desk.session) $("desk-done").hidden = true;
  desk.session = sessionId;
  desk.rowState = rowState(desk.page, sessionId);
  for (const button of $("queue").querySelectorAll("button.row")) markOpened(button);
  const holder = data.session.taken_by;
  const handed = data.session.handoff_at ? `handed off ${ago(data.session.handoff_at)} ago` :
    "not handed off";
  $("conversation-meta").textContent = `Customer ${data.customer} · ${handed} · ` +
    `${data.session.status === "resolved" ? "resolved" : "open"} · ` +
    (holder ? `taken by ${holder}` : "nobody has taken it yet");
  const email = data.session.contact_email;
  $("conversation-email").hidden = !email;
  if (email) {
    $("contact-link").textContent = email;
    $("contact-link").href = "mailto:" + email;
  }
  const mine = holder === desk.me.key;
  $("take").hidden = mine;
  $("reply").hidden = !mine;
  // the transcript with the customer's marks beside the replies and their sources as links,
  // then their answer to the closing question
  Staff.transcript($("transcript"), data.turns, data.feedback, (turn) =>
    "Customer" + (turn.status === "waiting_for_agent" ? " (waiting for you)" : ""));
  const closing = Staff.closingWords(Staff.closingAnswer(data.session));
  $("conversation-closing").textContent = closing ? `The customer ${closing}.` : "";
  $("conversation-closing").hidden = !closing;
  // nobody replied yet: closing it is no resolution, and the customer is not told it is
  desk.replied = data.turns.some((turn) => turn.from === "agent");
  $("resolve-button").textContent = desk.replied ? "Resolve" : "Close without reply";
  $("resolve-untouched").hidden = desk.replied;
  const entities = $("entities");
  entities.replaceChildren();
  for (const e of data.entities) {
    entities.append(Object.assign(document.createElement("li"),
                                  { textContent: `${e.type} ${e.value}` }));
  }
  const memories = $("memories");
  memories.replaceChildren();
  for (const m of data.memories || []) {
    memories.append(Object.assign(document.createElement("li"),
      { textContent: `Earlier (${new Date(m.ts * 1000).toLocaleDateString()}): ${m.summary} — ${m.resolution}` }));
  }
  $("known-nothing").hidden = data.entities.length + (data.memories || []).length > 0;
  showSuggestion(mine || !holder ? data.suggestion : null);
  $("conversation-section").hidden = false;
}

$("key-form").addEventListener("submit", guarded(async () => {
  Staff.key = $("api-key").value.trim();
  desk.me = await call("/v1/me");
  await loadQueue(true);
  $("key-form").hidden = true;
  $("lead-link").hidden = desk.me.role !== "admin"; // the reports are the lead's page
  setInterval(() => poll().catch((err) => showError(err.message)), POLL_MS);
}));

$("queue-newer").addEventListener("click", guarded(async () => {
  desk.offset += PAGE;
  await loadQueue(true);
}));

$("queue-older").addEventListener("click", guarded(async () => {
  desk.offset = Math.max(0, desk.offset - PAGE);
  await loadQueue(true);
}));

$("use-suggestion").addEventListener("click", () => {
  $("reply-text").value = desk.suggestion || "";
  $("reply-text").focus();
});

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
  const done = await call(`/v1/sessions/${desk.session}/resolve`,
                          { note: $("resolve-note").value.trim() });
  // the conversation leaves the queue: say what happened to it
  const who = $("conversation-meta").textContent.split(" · ")[0];
  closeConversation(done.session.closed_without_reply
    ? `Closed without reply: ${who}. The customer is told the conversation was closed, ` +
      "not that it was resolved."
    : `Resolved: ${who}. The customer is asked whether the problem was solved.`);
  $("resolve-note").value = "";
  await loadQueue(true);
}));
