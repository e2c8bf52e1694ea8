// The pilot's chat page: an access key opens a session, then the conversation (chat.js) runs
// against /v1/sessions on this page's own origin. The conversation (its session and the key
// that holds it) is kept in this tab's sessionStorage, so a reload resumes it as the widget
// does; it ends with the tab.
"use strict";
const state = { key: null, chat: null, get session() { return this.chat && this.chat.session; } };
const $ = (id) => document.getElementById(id);
const KEPT = "supportcrew-chat";

function showError(text) {
  const banner = $("error");
  banner.textContent = text;
  banner.hidden = !text;
}

function keep(session) {
  try {
    sessionStorage.setItem(KEPT, JSON.stringify({ session_id: session, key: state.key }));
  } catch { /* storage refused (private mode): the conversation just ends with the page */ }
}

function kept() {
  try {
    const found = JSON.parse(sessionStorage.getItem(KEPT) || "null");
    return found && found.session_id && found.key ? found : null;
  } catch { return null; }
}

function forget() {
  try { sessionStorage.removeItem(KEPT); } catch { /* nothing kept */ }
}

// The conversation `session` with the key, shown (``resume``: its past turns first).
function start(session, resume) {
  $("key-form").hidden = true;
  // "New conversation" (and a message after a person resolved this one) opens another
  const restart = async () => ({
    session: (await SupportcrewChat.call("", "/v1/sessions", state.key, {})).session_id,
    credential: state.key,
  });
  state.chat = SupportcrewChat.mount($("conversation"), {
    credential: state.key, session, restart, resume, changed: (chat) => keep(chat.session),
  });
  keep(session);
  return state.chat;
}

$("key-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  state.key = $("api-key").value.trim();
  try {
    const created = await SupportcrewChat.call("", "/v1/sessions", state.key, {});
    showError("");
    start(created.session_id, false).focus();
  } catch (err) { showError(err.message); }
});

// A reload: the kept conversation again, as it stands (a hand-off, a person's replies).
const resumed = kept();
if (resumed) {
  state.key = resumed.key;
  const chat = start(resumed.session_id, true);
  chat.ready.then(() => chat.focus()).catch((err) => {
    // gone (the key was changed, the session removed): the page starts over
    forget();
    $("conversation").replaceChildren();
    state.chat = null;
    $("key-form").hidden = false;
    showError("Your earlier conversation could not be opened again (" + err.message +
              "). Enter your key to start a new one.");
  });
}
