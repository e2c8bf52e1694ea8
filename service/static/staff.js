// What the agent desk (/agent) and the lead's page (/lead) share: a staff key's API calls,
// error banner, small DOM helpers. Plain JS, no build step; loaded before each page's script.
//   Staff.key = "...";  const data = await Staff.call("/v1/me");
//   button.addEventListener("click", Staff.guarded(async () => { ... }));
"use strict";
const Staff = (() => {
  const $ = (id) => document.getElementById(id);
  const state = { key: null, lastEtag: null };

  function showError(text) {
    $("error").textContent = text;
    $("error").hidden = !text;
  }

  // GET (no body) or POST JSON with the key; null on 304; an Error with the service's message.
  async function call(path, body, extraHeaders) {
    const response = await send(path, body, extraHeaders);
    if (response.status === 304) return null; // nothing changed since the last poll
    state.lastEtag = response.headers.get("ETag");
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error((data.error && data.error.message) || "Request failed: " + response.status);
      error.status = response.status;
      throw error;
    }
    return data;
  }

  async function send(path, body, extraHeaders) {
    try {
      return await fetch(path, {
        method: body === undefined ? "GET" : "POST",
        headers: { "Content-Type": "application/json", "Authorization": "Bearer " + state.key,
                   ...(extraHeaders || {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new Error("The support service cannot be reached.");
    }
  }

  // A file the key may read (a CSV), saved by the browser under `name`.
  async function download(path, name) {
    const response = await send(path);
    if (!response.ok) throw new Error("Request failed: " + response.status);
    const link = Object.assign(document.createElement("a"),
                               { href: URL.createObjectURL(await response.blob()), download: name });
    document.body.append(link);
    link.click();
    link.remove();
  }

  // <li class=className><strong>label: </strong><span>text</span></li>
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

  function element(tag, props, ...children) {
    const node = Object.assign(document.createElement(tag), props || {});
    node.append(...children);
    return node;
  }

  // "3 min", "2 h 5 min", "4 days": how long since an epoch-seconds time.
  function ago(epochSeconds) {
    const minutes = Math.max(0, Math.round((Date.now() / 1000 - epochSeconds) / 60));
    if (minutes < 60) return `${minutes} min`;
    if (minutes < 48 * 60) return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
    return `${Math.floor(minutes / 1440)} days`;
  }

  // "Assistant (could not answer)": a reply's label in words, not its internal verdict code;
  // small talk (a greeting, thanks, an email noted, a declined offer) is just "Assistant (small talk)".
  const SMALL_TALK = ["greeting", "courtesy", "contact", "decline"];
  const VERDICT_WORDS = { answered: "answered", idk: "could not answer", suggest: "suggested an article",
                          handoff: "handed off", error: "failed" };
  function replyLabel(turn) {
    const words = SMALL_TALK.includes(turn.kind) ? "small talk" : VERDICT_WORDS[turn.verdict];
    return words ? `Assistant (${words})` : "Assistant";
  }

  // An event handler whose failure shows in the error banner instead of being lost.
  function guarded(handler) {
    return async (event) => {
      if (event) event.preventDefault();
      try {
        await handler(event);
        showError("");
      } catch (err) { showError(err.message); }
    };
  }

  return { state, $, call, download, item, element, ago, guarded, showError, replyLabel,
           verdictWords: VERDICT_WORDS,
           set key(value) { state.key = value; }, get lastEtag() { return state.lastEtag; } };
})();
