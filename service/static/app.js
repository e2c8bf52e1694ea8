// The pilot's chat page: an access key opens a session, then the conversation (chat.js) runs
// against /v1/sessions on this page's own origin.
"use strict";
const state = { key: null, chat: null, get session() { return this.chat && this.chat.session; } };
const $ = (id) => document.getElementById(id);

function showError(text) {
  const banner = $("error");
  banner.textContent = text;
  banner.hidden = !text;
}

$("key-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  state.key = $("api-key").value.trim();
  try {
    const created = await SupportcrewChat.call("", "/v1/sessions", state.key, {});
    showError("");
    $("key-form").hidden = true;
    // "New conversation" (and a message after a person resolved this one) opens another
    const restart = async () => ({
      session: (await SupportcrewChat.call("", "/v1/sessions", state.key, {})).session_id,
      credential: state.key,
    });
    state.chat = SupportcrewChat.mount($("conversation"),
                                       { credential: state.key, session: created.session_id, restart });
    state.chat.focus();
  } catch (err) { showError(err.message); }
});
