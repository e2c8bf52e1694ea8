// The conversation itself, shared by the web chat page (/) and the embeddable widget
// (/widget.js): plain JS, no build step. SupportcrewChat.mount(root, options) renders a
// conversation over /v1/sessions into root (an element, or the widget's shadow root).
"use strict";
(function () {
  const POLL_MS = 3000;
  const WAITING = "Waiting for a person: a member of our support team will reply here. " +
    "You can keep writing.";
  // why a conversation is handed off from the offer after a "no" to the closing question
  const NOT_SOLVED = "the customer said the problem was not solved";
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

  // Text with its web addresses as links ("Sources: [1] Refunds: https://..."), the rest as
  // text; shared with the desk and the lead's page (staff.js).
  function withLinks(text) {
    const span = element("span", { className: "text" });
    for (const part of String(text).split(/(https?:\/\/[^\s<>"]+)/)) {
      const address = part.replace(/[.,;:!?)\]]+$/, "");
      const url = /^https?:\/\//.test(part) ? safeUrl(address) : null;
      if (!url) { span.append(part); continue; }
      span.append(link(address, url), part.slice(address.length));
    }
    return span;
  }

  // A link that opens in a new tab without handing it this page.
  function link(text, url) {
    const anchor = element("a", {}, text);
    Object.assign(anchor, { href: url, target: "_blank", rel: "noopener noreferrer" });
    return anchor;
  }

  // A reply's sources as a list: each page's title, a link where it has a safe address.
  // base: the service's address where the list is shown on another site (the widget), so a
  // link that is a path opens on the service.
  function sourceList(citations, base) {
    const list = element("ol", { className: "citations" });
    list.setAttribute("aria-label", "Sources");
    for (const c of citations.filter((c) => c && typeof c === "object")) {
      const url = safeUrl(c.url, base);
      list.append(element("li", {}, url ? link(c.title || c.source_id, url)
        : element("span", {}, c.title || c.source_id)));
    }
    return list;
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
                   joined: false, replied: false, csatAnswered: false, onClosed: null };
    const base = options.base || "";
    const error = element("div", { className: "banner error", hidden: true });
    error.setAttribute("role", "alert");
    // Handed to people: it says it waits until a person takes it, then who joined.
    const handoff = element("div", { id: "handoff", className: "banner handoff", hidden: true });
    handoff.setAttribute("role", "status");
    const ended = element("div", { className: "banner ended", hidden: true });
    ended.setAttribute("role", "status");
    // "New conversation" while a person is to reply: asked first, never dropped silently
    const leaveYes = element("button", { type: "button" }, "Leave and start a new conversation");
    const leaveNo = element("button", { type: "button", className: "skip" }, "Stay");
    const leaving = element("div", { className: "leave", hidden: true },
      element("p", { id: "leave-question" }, "Our support team has not finished with this " +
        "conversation. If you start a new one, this one is closed and nobody can reply to it here."),
      element("div", { className: "choices" }, leaveYes, leaveNo));
    leaving.setAttribute("role", "group");
    leaving.setAttribute("aria-labelledby", "leave-question");
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
    root.append(messages, handoff, ended, csat, leaving, contact, error, ask);

    function showError(err) {
      const text = typeof err === "string" ? err
        : (err.status === 401 && options.expired) || err.message;
      error.textContent = text;
      error.hidden = !text;
      if (text) error.scrollIntoView({ block: "nearest" });
    }

    function addMessage(role, text) {
      const who = { user: "You: ", agent: "Support team (a person): " }[role] || "Support: ";
      // a reply's web addresses are links (an answer quoting a page, a person's reply)
      const body = role === "user" ? element("span", { className: "text" }, text) : withLinks(text);
      const item = element("li", { className: role }, element("strong", {}, who), body);
      messages.append(item);
      item.scrollIntoView({ block: "nearest" });
      return item;
    }

    function addCitations(item, citations) {
      const list = sourceList(citations, base);
      if (list.children.length) item.append(list);
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

    // answered: whether the customer answered (true) or skipped it (false); stay: the answer
    // left the customer a next step (a "no" offers a person), so the panel stays open
    function doneAsking(answered, stay) {
      const closed = chat.onClosed;
      chat.onClosed = null;
      if (closed) closed(answered, Boolean(stay));
    }

    async function answerSatisfaction(solved) {
      for (const button of [csatYes, csatNo]) button.disabled = true;
      try {
        const answer = await call(base, `/v1/sessions/${chat.session}/satisfaction`,
                                  chat.credential, { solved });
        chat.csatAnswered = true;
        showError("");
        csat.hidden = true;
        const said = addMessage("note", answer.reply);
        said.classList.add("csat-thanks");
        if (answer.offers_person) {
          // not solved: a person, in this conversation or (once it is closed) a new one
          const reach = element("button", { type: "button", className: "person" }, "Talk to a person");
          reach.addEventListener("click", () => askForPerson(NOT_SOLVED));
          said.append(element("div", { className: "next" }, reach));
          said.scrollIntoView({ block: "nearest" }); // the offer's button in sight too
        }
        doneAsking(true, answer.offers_person);
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

    // Handed to people: the banner (waiting, or who joined), the optional email (unless
    // given), and polling for replies.
    function handedOff(session) {
      chat.handedOff = true;
      handoff.hidden = false;
      person.hidden = true;
      // an offer of a person made before (a "no" to the closing question) is taken up
      for (const offer of messages.querySelectorAll(".next")) offer.remove();
      contact.hidden = Boolean(session && session.contact_email);
      if (session && session.taken_at) joined(session, false);
      else handoff.textContent = WAITING;
      showLatest(); // the banner and the form take room: the last message stays in sight
      waitForPeople();
    }

    // A person took the conversation: the banner and (said once, as it happens) a note name
    // who joined.
    function joined(session, now) {
      const who = session.agent_name ? `${session.agent_name} from our support team`
        : "A person from our support team";
      handoff.textContent = `${who} has joined this conversation and will reply here.`;
      if (now && !chat.joined) addMessage("note", `${who} joined the conversation.`);
      chat.joined = true;
    }

    function showLatest() {
      if (messages.lastElementChild) messages.lastElementChild.scrollIntoView({ block: "nearest" });
    }

    // A person resolved it (or closed it without a reply: then the customer is told just
    // that, and not asked whether it solved the problem): the banner goes, the next message
    // opens a new conversation.
    function resolved(session) {
      stopPolling();
      chat.ended = true;
      chat.handedOff = false;
      handoff.hidden = true;
      contact.hidden = true;
      leaving.hidden = true;
      ended.hidden = false;
      // a closed conversation takes no more marks: its question is the closing one
      for (const box of messages.querySelectorAll(".feedback")) box.remove();
      if (session.closed_without_reply) {
        ended.textContent = "Our support team closed this conversation without a reply. " +
          "Your next message starts a new one, or talk to a person.";
        person.hidden = false; // a person, in a new conversation
        return;
      }
      person.hidden = true;
      ended.textContent = "Our support team resolved this conversation. Your next message starts a new one.";
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
      if (data.session.taken_at && !chat.joined && data.session.status === "handoff") {
        joined(data.session, true);
      }
      for (const turn of data.turns) {
        if (turn.from === "agent" && !chat.seenReplies.has(turn.turn_index)) {
          chat.seenReplies.add(turn.turn_index);
          chat.replied = true;
          addMessage("agent", turn.answer);
        }
      }
      if (data.session.status === "resolved") resolved(data.session);
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
      if (data.session.status === "resolved") resolved(data.session);
      else if (data.session.handoff) handedOff(data.session);
      showLatest();
    }

    // A new conversation: a new session (and its credential); `clear` empties the view.
    async function startOver(clear) {
      const next = await options.restart();
      stopPolling();
      Object.assign(chat, { session: next.session, credential: next.credential, ended: false,
                            handedOff: false, joined: false, seenReplies: new Set(),
                            replied: false, csatAnswered: false, onClosed: null });
      for (const banner of [handoff, contact, ended, csat, leaving, error]) banner.hidden = true;
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

    // The customer asks for a person (the button, or the offer after a "no" to the closing
    // question, ``reason`` saying so): a closed conversation is followed by a new one. True
    // once handed off.
    async function askForPerson(reason) {
      person.disabled = true;
      try {
        if (chat.ended && options.restart) await startOver(false);
        const data = await call(base, `/v1/sessions/${chat.session}/handoff`, chat.credential,
                                reason ? { reason } : {});
        showError("");
        const item = addMessage("assistant", data.message);
        item.dataset.verdict = "handoff";
        // the hand-off line is a stored reply: rated like any other
        if (typeof data.turn_index === "number") addFeedback(item, data.turn_index);
        handedOff(data.session);
        email.focus();
        return true;
      } catch (err) {
        showError(err);
        return false;
      } finally {
        person.disabled = false;
      }
    }

    person.addEventListener("click", () => askForPerson());

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

    // A new conversation; while a person is still to reply, asked first (below).
    fresh.addEventListener("click", async () => {
      if (chat.handedOff && !chat.ended) {
        leaving.hidden = false;
        leaveNo.focus();
        return;
      }
      try {
        await startOver(true);
        question.focus();
      } catch (err) { showError(err); }
    });

    leaveNo.addEventListener("click", () => {
      leaving.hidden = true;
      question.focus();
    });

    // Leaving closes the hand-off as left by the customer (the queue stops showing it
    // waiting), then the new conversation starts.
    leaveYes.addEventListener("click", async () => {
      leaveYes.disabled = true;
      try {
        await call(base, `/v1/sessions/${chat.session}/leave`, chat.credential, {})
          .catch((err) => { if (err.status !== 409) throw err; }); // closed meanwhile: fine
        await startOver(true);
        question.focus();
      } catch (err) { showError(err); }
      finally { leaveYes.disabled = false; }
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

  window.SupportcrewChat = { mount, call, element, withLinks, sourceList };
})();
