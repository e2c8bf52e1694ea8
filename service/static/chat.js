// The conversation itself, shared by the web chat page (/) and the embeddable widget
// (/widget.js): plain JS, no build step. SupportcrewChat.mount(root, options) renders a
// conversation over /v1/sessions into root (an element, or the widget's shadow root).
"use strict";
(function () {
  const POLL_MS = 3000;
  // After a reload, the note the first message to a person got (messages.handoff_waiting's
  // default): the service answers it once and does not store it.
  const WAITING_NOTE = "Thanks, a person from our team will reply here.";
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
      error.code = data.error && data.error.code;
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
      // no answer we may read: the network, or (a widget) a site whose origin gets no CORS grant
      throw Object.assign(new Error(UNREACHABLE), { unreachable: true });
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
  // A path (a desk article's link without pilot.public_url) is the service's: resolved against
  // its base, never the embedding site.
  function safeUrl(value, base) {
    if (typeof value !== "string" || !value) return null;
    try {
      const url = new URL(value, base || window.location.href);
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch {
      return null;
    }
  }

  // options: base, credential (a key or a widget session token), session (its id),
  // expired (what to say when the credential is refused, e.g. a widget token that ran out),
  // resume (show the session's past turns first), restart (async () => ({session, credential}):
  // a new conversation; without it there is no "New conversation"), changed (chat) after the
  // session or its credential changed (the widget keeps them for a reload). chat.leaving()
  // asks the closing question if it is due (true: it is shown, the panel should stay open);
  // chat.onClosed, when set, is called once the customer answered or skipped it.
  function mount(root, options) {
    const chat = { session: options.session, credential: options.credential,
                   seenReplies: new Set(), polling: null, ended: false, handedOff: false,
                   replied: false, csatAnswered: false, onClosed: null };
    const base = options.base || "";
    const error = element("div", { className: "banner error", hidden: true });
    error.setAttribute("role", "alert");
    const handoff = element("div", { id: "handoff", className: "banner handoff", hidden: true },
      "You are now talking to a person: a member of our support team will reply here.");
    handoff.setAttribute("role", "status");
    const ended = element("div", { className: "banner ended", hidden: true },
      "Our support team resolved this conversation. Your next message starts a new one.");
    ended.setAttribute("role", "status");
    const email = element("input", { id: "contact-email", name: "email", type: "email",
                                     maxLength: 254, autocomplete: "email" });
    const contact = element("form", { className: "contact", hidden: true },
      element("label", { htmlFor: "contact-email" },
              "Your email (optional), so a person can answer if you leave"),
      email, element("button", { type: "submit" }, "Save email"));
    // The closing question: once per conversation, optional, never in the customer's way.
    const csatYes = element("button", { type: "button" }, "Yes");
    const csatNo = element("button", { type: "button" }, "No");
    const csatSkip = element("button", { type: "button", className: "skip" }, "Not now");
    const csat = element("div", { className: "csat", hidden: true },
      element("p", { id: "csat-question" }, "Did we solve your problem today?"),
      element("div", { className: "choices" }, csatYes, csatNo, csatSkip));
    csat.setAttribute("role", "group");
    csat.setAttribute("aria-labelledby", "csat-question");
    const messages = element("ol", { id: "messages", className: "messages" });
    messages.setAttribute("aria-live", "polite");
    messages.setAttribute("aria-label", "Conversation");
    const question = element("textarea", { id: "question", name: "question", rows: 2, maxLength: 8000,
                                           required: true });
    const send = element("button", { type: "submit", id: "send" }, "Send");
    const person = element("button", { type: "button", className: "person" }, "Talk to a person");
    const fresh = element("button", { type: "button", className: "new", hidden: !options.restart },
                          "New conversation");
    const ask = element("form", { className: "ask" },
      element("label", { htmlFor: "question" }, "Your question"), question,
      element("div", { className: "actions" }, send, person, fresh));
    root.append(messages, handoff, ended, csat, contact, error, ask);

    function showError(err) {
      const text = typeof err === "string" ? err
        : (err.status === 401 && options.expired) || err.message;
      error.textContent = text;
      error.hidden = !text;
      if (text) error.scrollIntoView({ block: "nearest" });
    }

    // A person's reply with its web addresses as links ("Sources: [1] Refunds: https://..."),
    // the rest as text.
    function withLinks(text) {
      const span = element("span", { className: "text" });
      for (const part of text.split(/(https?:\/\/[^\s<>"]+)/)) {
        const address = part.replace(/[.,;:!?)\]]+$/, "");
        const url = /^https?:\/\//.test(part) ? safeUrl(address) : null;
        if (!url) { span.append(part); continue; }
        const link = element("a", {}, address);
        Object.assign(link, { href: url, target: "_blank", rel: "noopener noreferrer" });
        span.append(link, part.slice(address.length));
      }
      return span;
    }

    function addMessage(role, text) {
      const who = { user: "You: ", agent: "Support team (a person): " }[role] || "Support: ";
      const body = role === "agent" ? withLinks(text) : element("span", { className: "text" }, text);
      const item = element("li", { className: role }, element("strong", {}, who), body);
      messages.append(item);
      item.scrollIntoView({ block: "nearest" });
      return item;
    }

    function addCitations(item, citations) {
      const shown = citations.filter((c) => c && typeof c === "object");
      if (!shown.length) return;
      const list = element("ol", { className: "citations" });
      list.setAttribute("aria-label", "Sources");
      for (const c of shown) {
        const url = safeUrl(c.url, base);
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
            await call(base, `/v1/sessions/${chat.session}/feedback`, chat.credential,
                       { turn_index: turnIndex, rating });
            box.replaceChildren(element("span", { className: "thanks" }, "Thanks for your feedback."));
          } catch (err) { showError(err); }
        });
        box.append(button);
      }
      item.append(box);
    }

    // Ask "Did we solve your problem today?" if the conversation had a reply and it was not
    // answered yet: true when it is shown.
    function askSatisfaction() {
      if (chat.csatAnswered || !chat.replied) return false;
      if (csat.hidden) {
        csat.hidden = false;
        csat.scrollIntoView({ block: "nearest" });
      }
      return true;
    }

    // answered: whether the customer answered (true) or skipped it (false)
    function doneAsking(answered) {
      const closed = chat.onClosed;
      chat.onClosed = null;
      if (closed) closed(answered);
    }

    async function answerSatisfaction(solved) {
      for (const button of [csatYes, csatNo]) button.disabled = true;
      try {
        await call(base, `/v1/sessions/${chat.session}/satisfaction`, chat.credential, { solved });
        chat.csatAnswered = true;
        showError("");
        csat.hidden = true;
        const thanks = addMessage("note", solved ? "Thanks for telling us: glad we could help."
          : "Thanks for telling us: we will use it to do better.");
        thanks.classList.add("csat-thanks");
        doneAsking(true);
      } catch (err) { showError(err); }
      finally { for (const button of [csatYes, csatNo]) button.disabled = false; }
    }

    csatYes.addEventListener("click", () => answerSatisfaction(true));
    csatNo.addEventListener("click", () => answerSatisfaction(false));
    csatSkip.addEventListener("click", () => {
      csat.hidden = true;
      chat.csatAnswered = true; // skipped: not asked again in this conversation
      // kept, so the lead's report counts who was asked; a failure here stops nobody
      call(base, `/v1/sessions/${chat.session}/satisfaction/skip`, chat.credential, {})
        .catch(() => {});
      doneAsking(false);
    });

    function emailNote(address) {
      return "Thanks: if you leave, a person will answer you at " + address + ".";
    }

    // The email the session keeps for a person to answer at (null: none yet).
    async function keptEmail() {
      const data = await call(base, `/v1/sessions/${chat.session}`, chat.credential);
      return data.session.contact_email || null;
    }

    function stopPolling() {
      if (chat.polling) clearInterval(chat.polling);
      chat.polling = null;
    }

    // Handed to people: the banner, the optional email (unless given), and polling for replies.
    function handedOff(session) {
      chat.handedOff = true;
      handoff.hidden = false;
      person.hidden = true;
      contact.hidden = Boolean(session && session.contact_email);
      showLatest(); // the banner and the form take room: the last message stays in sight
      waitForPeople();
    }

    function showLatest() {
      if (messages.lastElementChild) messages.lastElementChild.scrollIntoView({ block: "nearest" });
    }

    // A person resolved it: the banner goes, the next message opens a new conversation.
    function resolved() {
      stopPolling();
      chat.ended = true;
      chat.handedOff = false;
      handoff.hidden = true;
      contact.hidden = true;
      person.hidden = true;
      ended.hidden = false;
      // a resolved conversation takes no more marks: its question is the closing one
      for (const box of messages.querySelectorAll(".feedback")) box.remove();
      askSatisfaction();
    }

    function showTurn(turn, rated) {
      if (turn.user) addMessage("user", turn.user);
      if (turn.from === "agent") {
        chat.seenReplies.add(turn.turn_index);
        chat.replied = true;
        addMessage("agent", turn.answer);
      } else if (turn.answer) {
        const item = addMessage("assistant", turn.answer);
        item.dataset.verdict = turn.verdict;
        addCitations(item, turn.citations || []);
        chat.replied = true;
        // every reply of the assistant's is rated: refusals, suggestions, hand-off lines too
        if (!rated.has(turn.turn_index)) addFeedback(item, turn.turn_index);
      }
    }

    // After a hand-off, a person's replies arrive in the session: poll for them (and for
    // the person resolving it).
    async function showAgentReplies() {
      const data = await call(base, `/v1/sessions/${chat.session}`, chat.credential);
      for (const turn of data.turns) {
        if (turn.from === "agent" && !chat.seenReplies.has(turn.turn_index)) {
          chat.seenReplies.add(turn.turn_index);
          chat.replied = true;
          addMessage("agent", turn.answer);
        }
      }
      if (data.session.status === "resolved") resolved();
    }

    function waitForPeople() {
      if (chat.polling) return;
      chat.polling = setInterval(() => showAgentReplies().catch(showError), POLL_MS);
    }

    // The session's past turns (a reload, another page of the site).
    async function resume() {
      const data = await call(base, `/v1/sessions/${chat.session}`, chat.credential);
      const rated = new Set((data.feedback || []).map((f) => f.turn_index));
      chat.csatAnswered = typeof data.session.csat_solved === "boolean";
      let noted = false;
      for (const turn of data.turns) {
        showTurn(turn, rated);
        // the note said after the first message that waited for a person (it is not stored)
        if (!noted && turn.status === "waiting_for_agent" && !turn.answer && turn.from !== "agent") {
          addMessage("note", WAITING_NOTE);
          noted = true;
        }
      }
      if (data.session.status === "resolved") resolved();
      else if (data.session.handoff) handedOff(data.session);
      showLatest();
    }

    // A new conversation: a new session (and its credential); `clear` empties the view.
    async function startOver(clear) {
      const next = await options.restart();
      stopPolling();
      Object.assign(chat, { session: next.session, credential: next.credential, ended: false,
                            handedOff: false, seenReplies: new Set(), replied: false,
                            csatAnswered: false, onClosed: null });
      for (const banner of [handoff, contact, ended, csat, error]) banner.hidden = true;
      person.hidden = false;
      if (clear) messages.replaceChildren();
      else messages.append(element("li", { className: "divider" }, "New conversation"));
      if (options.changed) options.changed(chat);
    }

    async function sendTurn(text) {
      const progress = element("li", { className: "progress" }, "Working on it…");
      progress.setAttribute("role", "status");
      messages.append(progress);
      try {
        return await askStreaming(base, `/v1/sessions/${chat.session}/messages`,
                                  chat.credential, { message: text },
                                  (label) => { progress.textContent = label + "…"; });
      } finally {
        progress.remove();
      }
    }

    ask.addEventListener("submit", async (event) => {
      event.preventDefault();
      const text = question.value.trim();
      if (!text) return;
      send.disabled = true;
      csat.hidden = true; // writing again: not done yet
      chat.onClosed = null;
      try {
        if (chat.ended && options.restart) await startOver(false);
        const mine = addMessage("user", text);
        question.value = "";
        let result;
        try {
          result = await sendTurn(text);
        } catch (err) {
          // resolved by a person since we last looked: this message opens a new conversation
          if (err.status !== 409 || !options.restart) throw err;
          await startOver(false);
          messages.append(mine); // after the "New conversation" divider
          result = await sendTurn(text);
        }
        showError("");
        const repliedBefore = chat.replied;
        // an email typed while waiting for a person is kept as the form keeps it: say so, and
        // the form stops asking for it
        const typed = chat.handedOff && result.kind === "contact" && !contact.hidden
          ? await keptEmail() : null;
        if (typed) {
          contact.hidden = true;
          addMessage("note", emailNote(typed));
        } else if (result.answer) {
          const item = addMessage(chat.handedOff ? "note" : "assistant", result.answer);
          item.dataset.verdict = result.verdict;
          addCitations(item, result.citations || []);
          // every reply of the assistant's: "I could not find this", "this article may help"
          // and the hand-off line too (not the note that a person will reply)
          if (!chat.handedOff && typeof result.turn_index === "number") {
            addFeedback(item, result.turn_index);
          }
          item.scrollIntoView({ block: "nearest" }); // its sources and rating buttons too
          if (!chat.handedOff) chat.replied = true;
        }
        if (result.handoff && !chat.handedOff) handedOff(null);
        else if (result.closes && repliedBefore) askSatisfaction(); // goodbye after a reply
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

    person.addEventListener("click", async () => {
      person.disabled = true;
      try {
        if (chat.ended && options.restart) await startOver(false);
        const data = await call(base, `/v1/sessions/${chat.session}/handoff`, chat.credential, {});
        showError("");
        const item = addMessage("assistant", data.message);
        item.dataset.verdict = "handoff";
        // the hand-off line is a stored reply: rated like any other
        if (typeof data.turn_index === "number") addFeedback(item, data.turn_index);
        handedOff(data.session);
        email.focus();
      } catch (err) {
        showError(err);
      } finally {
        person.disabled = false;
      }
    });

    contact.addEventListener("submit", async (event) => {
      event.preventDefault();
      const address = email.value.trim();
      if (!address) return;
      try {
        await call(base, `/v1/sessions/${chat.session}/contact`, chat.credential, { email: address });
        showError("");
        contact.hidden = true;
        addMessage("note", emailNote(address));
      } catch (err) { showError(err); }
    });

    fresh.addEventListener("click", async () => {
      try {
        await startOver(true);
        question.focus();
      } catch (err) { showError(err); }
    });

    chat.focus = () => question.focus();
    // The customer closes the panel: the closing question first, if it is due.
    chat.leaving = () => {
      // not while a person is still to reply: the question is asked when they resolve it
      if (chat.csatAnswered || !chat.replied || chat.handedOff) return false;
      if (!csat.hidden) return false; // asked already: Close again closes
      askSatisfaction();
      csatYes.focus();
      return true;
    };
    chat.ready = options.resume ? resume() : Promise.resolve();
    return chat;
  }

  window.SupportcrewChat = { mount, call, element };
})();
