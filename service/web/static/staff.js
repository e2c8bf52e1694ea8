// What the agent desk (/agent) and the lead's page (/lead) share: a staff key's API calls,
// error banner, small DOM helpers, a conversation's transcript as both show it. Plain JS, no
// build step; loaded after chat.js (links in text, source lists) and before each page's script.
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

  // <li class=className><strong>label: </strong><span>text</span></li>, the text's web
  // addresses as links
  function item(className, label, text) {
    const entry = document.createElement("li");
    entry.className = className;
    const who = document.createElement("strong");
    who.textContent = label + ": ";
    entry.append(who, SupportcrewChat.withLinks(text));
    return entry;
  }

  // "2026-05-01 14:02" (UTC) of an epoch-seconds time.
  const when = (ts) => new Date(ts * 1000).toISOString().slice(0, 16).replace("T", " ");

  // The closing question and the customer's answer to it, in words ("" when not asked).
  const CLOSING = "“Did we solve your problem today?”";
  function closingWords(answer) {
    if (!answer) return "";
    const at = typeof answer.ts === "number" ? ` at ${when(answer.ts)}` : "";
    if (answer.skipped) return `closed ${CLOSING} unanswered${at}`;
    return `said ${answer.solved ? "yes" : "no"} to ${CLOSING}${at}`;
  }

  // A session's closing answer as ``closingWords`` reads it (null: never asked).
  function closingAnswer(session) {
    if (typeof session.csat_solved === "boolean") {
      return { solved: session.csat_solved, ts: session.csat_at };
    }
    return session.csat_skipped_at ? { skipped: true, ts: session.csat_skipped_at } : null;
  }

  // A conversation's turns into ``list`` as the desk and the lead's page show them: the
  // customer's messages (``customerLabel(turn)``), people's replies, and the assistant's
  // replies labelled in words, each with the customer's mark on it and its sources as titles
  // linking to their pages.
  function transcript(list, turns, feedback, customerLabel) {
    const marks = Object.fromEntries((feedback || []).map((f) => [f.turn_index, f]));
    list.replaceChildren();
    for (const turn of turns) {
      if (turn.user) list.append(item("user", customerLabel(turn), turn.user));
      if (turn.from === "agent") list.append(item("agent", `Agent ${turn.agent}`, turn.answer));
      else if (turn.answer) {
        const mark = marks[turn.turn_index];
        const marked = mark ? ` — marked ${mark.rating === "up" ? "helpful" : "not helpful"}` +
          (mark.comment ? ` (“${mark.comment}”)` : "") : "";
        const entry = item("assistant", replyLabel(turn) + marked, turn.answer);
        const sources = SupportcrewChat.sourceList(turn.citations || []);
        if (sources.children.length) entry.append(sources);
        if (mark) entry.dataset.mark = mark.rating;
        list.append(entry);
      }
    }
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
  const SMALL_TALK = ["greeting", "courtesy", "goodbye", "contact", "decline"];
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

  return { state, $, call, download, item, element, ago, when, guarded, showError, replyLabel,
           transcript, closingWords, closingAnswer, verdictWords: VERDICT_WORDS,
           set key(value) { state.key = value; }, get lastEtag() { return state.lastEtag; } };
})();
