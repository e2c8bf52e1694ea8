// The embeddable chat widget. A team pastes one tag into its pages:
//   <script src="https://support.example.com/widget.js" data-key="pk_live_..." async></script>
// data-key is a publishable widget key (it only opens sessions, only from the origins set for
// it); data-customer-token, when the visitor is signed in, is a short-lived token the team's
// server signs (HS256) naming the customer. No secret is in the page: the session gets a token
// of its own. The chat renders in a shadow root, so the site's styles and ours never mix.
"use strict";
(function () {
  const script = document.currentScript;
  if (!script || !script.dataset.key) {
    console.error("supportcrew widget: the script tag needs data-key (a widget key)");
    return;
  }
  const base = new URL(script.src).origin;
  const options = {
    key: script.dataset.key,
    customerToken: script.dataset.customerToken || null,
    title: script.dataset.title || "Support",
    greeting: script.dataset.greeting
      || "Hi! Ask your question: answers come from our help articles, and a person can take over.",
  };

  function start() {
    const { element } = window.SupportcrewChat;
    const host = element("div", { id: "supportcrew-widget" });
    document.body.append(host);
    const shadow = host.attachShadow({ mode: "open" });
    const sheets = ["/static/style.css", "/static/widget.css"].map(
      (path) => element("link", { rel: "stylesheet", href: base + path }));
    const launcher = element("button", { type: "button", className: "launcher" }, "Chat with " + options.title);
    launcher.setAttribute("aria-expanded", "false");
    const close = element("button", { type: "button", className: "close" }, "Close");
    close.setAttribute("aria-label", "Close the chat");
    const heading = element("h2", { id: "supportcrew-title" }, options.title);
    const body = element("div", { className: "body" },
                         element("p", { className: "greeting" }, options.greeting));
    const panel = element("section", { className: "panel", hidden: true },
                          element("header", {}, heading, close), body);
    panel.setAttribute("role", "dialog");
    panel.setAttribute("aria-labelledby", "supportcrew-title");
    shadow.append(...sheets, panel, launcher);
    let chat = null;
    let renewal = null;
    // This one conversation (its session id and its own token, nothing else) survives a reload
    // or another page of the site in this tab; the widget key never gives more than a new one.
    const stored = "supportcrew-widget:" + base + ":" + options.key;
    const RENEW_BEFORE_S = 300;

    function remembered() {
      try {
        const kept = JSON.parse(sessionStorage.getItem(stored) || "null");
        return kept && kept.session_id && kept.token && kept.expires_at > Date.now() / 1000 + 30
          ? kept : null;
      } catch { return null; }
    }

    function keep(session, token, expiresAt, open) {
      try {
        sessionStorage.setItem(stored, JSON.stringify(
          { session_id: session, token, expires_at: expiresAt, open: Boolean(open) }));
      } catch { /* storage refused (private mode): the conversation just ends with the page */ }
      scheduleRenewal(expiresAt);
    }

    function forget() {
      try { sessionStorage.removeItem(stored); } catch { /* nothing kept */ }
    }

    // The token renews itself a few minutes before it expires (or halfway, for short ones).
    function scheduleRenewal(expiresAt) {
      clearTimeout(renewal);
      const left = expiresAt - Date.now() / 1000;
      const wait = Math.max(5, Math.min(left - RENEW_BEFORE_S, left / 2));
      renewal = setTimeout(renew, wait * 1000);
    }

    async function renew() {
      if (!chat) return;
      try {
        const fresh = await window.SupportcrewChat.call(
          base, `/v1/widget/sessions/${chat.session}/token`, chat.credential, {});
        if (fresh.session_id !== chat.session) return; // a new conversation started meanwhile
        chat.credential = fresh.token;
        keep(chat.session, fresh.token, fresh.expires_at, !panel.hidden);
      } catch (err) {
        console.error("supportcrew widget: renewing the conversation's token failed: " + err.message);
      }
    }

    async function newSession() {
      const created = await window.SupportcrewChat.call(
        base, "/v1/widget/sessions", options.key,
        options.customerToken ? { customer_token: options.customerToken } : {});
      options.customerToken = null; // spent: a token opens one session
      keep(created.session_id, created.token, created.expires_at, true);
      return { session: created.session_id, credential: created.token };
    }

    function mountChat(opened, resume) {
      chat = window.SupportcrewChat.mount(body, {
        base, credential: opened.credential, session: opened.session, resume,
        expired: "This conversation has timed out. Start a new conversation to go on.",
        restart: newSession,
      });
      return chat;
    }

    // Why the chat cannot start, as the visitor should read it (the console says more).
    async function refusal(err) {
      if (err.code === "origin_not_allowed" || (err.unreachable && await serviceAnswers())) {
        // a site not among the key's origins gets no CORS grant: the browser hides why
        console.error(notForThisSite());
        return "Chat is not enabled on this site.";
      }
      console.error("supportcrew widget: opening a session failed (" + err.message + ")");
      return "The chat cannot start: " + err.message;
    }

    async function open() {
      panel.hidden = false;
      launcher.setAttribute("aria-expanded", "true");
      if (chat) { remember(true); chat.focus(); return; }
      const kept = remembered();
      if (kept) {
        try {
          mountChat({ session: kept.session_id, credential: kept.token }, true);
          await chat.ready;
          keep(kept.session_id, kept.token, kept.expires_at, true);
          chat.focus();
          return;
        } catch (err) {
          // the conversation is gone (expired, deleted, the key changed): start a new one
          console.error("supportcrew widget: cannot resume the conversation (" + err.message + ")");
          chat = null;
          forget();
          body.replaceChildren(element("p", { className: "greeting" }, options.greeting));
        }
      }
      try {
        mountChat(await newSession(), false);
        chat.focus();
      } catch (err) {
        const banner = element("div", { className: "banner error" }, await refusal(err));
        banner.setAttribute("role", "alert");
        body.replaceChildren(banner);
      }
    }

    // Whether the panel is open is kept too, so the next page opens it again.
    function remember(isOpen) {
      const kept = remembered();
      if (chat && kept && kept.session_id === chat.session) {
        keep(kept.session_id, chat.credential, kept.expires_at, isOpen);
      }
    }

    // Close: the closing question first when it is due ("Not now" or Close again closes);
    // answered yes, the panel closes a moment after the thanks; answered no, it stays open on
    // the offer of a person (Close again closes).
    function hide() {
      if (!panel.hidden && chat && chat.leaving && chat.leaving()) {
        chat.onClosed = (answered, stay) => {
          if (stay) return;
          if (answered) setTimeout(closePanel, 1500);
          else closePanel();
        };
        return;
      }
      closePanel();
    }

    function closePanel() {
      if (panel.hidden) return;
      panel.hidden = true;
      remember(false);
      launcher.setAttribute("aria-expanded", "false");
      launcher.focus();
    }

    launcher.addEventListener("click", () => (panel.hidden ? open() : hide()));
    close.addEventListener("click", hide);
    panel.addEventListener("keydown", (event) => { if (event.key === "Escape") hide(); });
    launcher.hidden = true; // shown once the service says this page may use the key
    allowedHere().then((allowed) => {
      if (!allowed) { host.remove(); return; }
      launcher.hidden = false;
      const kept = remembered();
      if (kept && kept.open) open();
    });
  }

  // Whether the key may be used on this page's origin: no launcher where chat cannot start
  // (the console says why and what to change). A service that cannot be reached gets the
  // launcher: it may be back by the time the visitor opens it, and says so if not.
  async function allowedHere() {
    try {
      await window.SupportcrewChat.call(base, "/v1/widget/ready", options.key);
      return true;
    } catch (err) {
      if (err.code === "origin_not_allowed" || (err.unreachable && await serviceAnswers())) {
        console.error(notForThisSite());
        return false;
      }
      if (err.status === 401 || err.status === 403) {
        console.error("supportcrew widget: the key is refused (" + err.message + "): no chat on this page.");
        return false;
      }
      return true;
    }
  }

  function notForThisSite() {
    return "supportcrew widget: the service refuses this page's origin, so the chat is not " +
      "shown. Add " + window.location.origin + " to the origins of the widget key " +
      options.key.slice(0, 12) + "… (pilot.api_keys[].origins).";
  }

  // Whether the service is up for this page at all: a no-cors request is answered (opaque)
  // whenever the service is reachable, whatever it thinks of this origin.
  async function serviceAnswers() {
    try {
      await fetch(base + "/healthz", { mode: "no-cors", cache: "no-store" });
      return true;
    } catch { return false; }
  }

  if (window.SupportcrewChat) { start(); return; }
  const core = document.createElement("script");
  core.src = base + "/static/chat.js";
  core.addEventListener("load", start);
  core.addEventListener("error", () => console.error("supportcrew widget: cannot load " + core.src));
  document.head.append(core);
})();
