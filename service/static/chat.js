// The conversation itself, shared by the web chat page (/) and the embeddable widget
// (/widget.js): plain JS, no build step. SupportcrewChat.mount(root, options) renders a
// conversation over /v1/sessions into root (an element, or the widget's shadow root).
"use strict";
(function () {
  const POLL_MS = 3000;
  const UNREACHABLE = "The support service cannot be reached. Check your connection and try again.";

  function element(tag, props, ...children) {
    const node = Object.assign(document.createElement(tag), props || {});
    node.append(...children);
    return node;
  }

  // A JSON answer: the error's message when it failed (a 503 may still carry a turn's result).
  async function readJson(response) {
    const data = await response.json().catch(() => ({}));
    if (!response.ok && !(response.status === 503 && data.result)) {
      const error = new Error((data.error && data.error.message) || ("Request failed: " + response.status));
      error.status = response.status;
      throw error;
    }
    return data.result || data;
  }

  // One request to the service at `base` ("" for this page's own origin) with a bearer credential.
  async function request(base, path, credential, body, accept) {
    const headers = { "Content-Type": "application/json", "Authorization": "Bearer " + credential };
    if (accept) headers.Accept = accept;
    try {
      return await fetch(base + path, {
        method: body === undefined ? "GET" : "POST",
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new Error(UNREACHABLE);
    }
  }

  async function call(base, path, credential, body) {
    return readJson(await request(base, path, credential, body));
  }

  // One turn over server-sent events: onStep(label) as each step starts, then the result.
  async function askStreaming(base, path, credential, body, onStep) {
    const response = await request(base, path, credential, body, "text/event-stream");
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

  // options: base, credential (a key or a widget session token), session (its id),
  // expired (what to say when the credential is refused, e.g. a widget token that ran out).
  function mount(root, options) {
    const chat = { session: options.session, seenReplies: new Set(), polling: null };
    const base = options.base || "";
    const error = element("div", { className: "banner error", hidden: true });
    error.setAttribute("role", "alert");
    const handoff = element("div", { id: "handoff", className: "banner handoff", hidden: true },
      "You are now talking to a human: a member of our support team will reply here.");
    handoff.setAttribute("role", "status");
    const messages = element("ol", { id: "messages", className: "messages" });
    messages.setAttribute("aria-live", "polite");
    messages.setAttribute("aria-label", "Conversation");
    const question = element("textarea", { id: "question", name: "question", rows: 2, maxLength: 8000,
                                           required: true });
    const send = element("button", { type: "submit", id: "send" }, "Send");
    const ask = element("form", { className: "ask" },
      element("label", { htmlFor: "question" }, "Your question"), question, send);
    root.append(error, handoff, messages, ask);

    function showError(err) {
      const text = typeof err === "string" ? err
        : (err.status === 401 && options.expired) || err.message;
      error.textContent = text;
      error.hidden = !text;
    }

    function addMessage(role, text) {
      const who = { user: "You: ", agent: "Support team (a person): " }[role] || "Support: ";
      const item = element("li", { className: role }, element("strong", {}, who),
                           element("span", {}, text));
      messages.append(item);
      return item;
    }

    function addCitations(item, citations) {
      if (!citations.length) return;
      const list = element("ol", { className: "citations" });
      list.setAttribute("aria-label", "Sources");
      for (const c of citations) {
        const url = safeUrl(c.url);
        const link = element(url ? "a" : "span", {}, c.title || c.source_id);
        if (url) { link.href = url; link.target = "_blank"; link.rel = "noopener noreferrer"; }
        list.append(element("li", {}, link));
      }
      item.append(list);
    }

    function addFeedback(item, turnIndex) {
      const box = element("div", { className: "feedback" });
      for (const [rating, label] of [["up", "Helpful"], ["down", "Not helpful"]]) {
        const button = element("button", { type: "button" }, label);
        button.addEventListener("click", async () => {
          try {
            await call(base, `/v1/sessions/${chat.session}/feedback`, options.credential,
                       { turn_index: turnIndex, rating });
            box.replaceChildren(element("span", { className: "thanks" }, "Thanks for your feedback."));
          } catch (err) { showError(err); }
        });
        box.append(button);
      }
      item.append(box);
    }

    // After a hand-off, a person's replies arrive in the session: poll for them.
    async function showAgentReplies() {
      const session = await call(base, `/v1/sessions/${chat.session}`, options.credential);
      for (const turn of session.turns) {
        if (turn.from === "agent" && !chat.seenReplies.has(turn.turn_index)) {
          chat.seenReplies.add(turn.turn_index);
          addMessage("agent", turn.answer);
        }
      }
    }

    function waitForPeople() {
      if (chat.polling) return;
      chat.polling = setInterval(() => showAgentReplies().catch(showError), POLL_MS);
    }

    ask.addEventListener("submit", async (event) => {
      event.preventDefault();
      const text = question.value.trim();
      if (!text) return;
      addMessage("user", text);
      question.value = "";
      send.disabled = true;
      try {
        const progress = element("li", { className: "progress" }, "Working on it…");
        progress.setAttribute("role", "status");
        messages.append(progress);
        let result;
        try {
          result = await askStreaming(base, `/v1/sessions/${chat.session}/messages`,
                                      options.credential, { message: text },
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
          handoff.hidden = false;
          waitForPeople();
        }
      } catch (err) {
        showError(err);
      } finally {
        send.disabled = false;
        question.focus();
      }
    });

    question.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        ask.requestSubmit();
      }
    });
    chat.focus = () => question.focus();
    return chat;
  }

  window.SupportcrewChat = { mount, call, element };
})();
