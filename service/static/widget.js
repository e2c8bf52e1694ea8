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

    async function open() {
      panel.hidden = false;
      launcher.setAttribute("aria-expanded", "true");
      if (chat) { chat.focus(); return; }
      try {
        const created = await window.SupportcrewChat.call(
          base, "/v1/widget/sessions", options.key,
          options.customerToken ? { customer_token: options.customerToken } : {});
        options.customerToken = null; // spent: a token opens one session
        chat = window.SupportcrewChat.mount(body, {
          base, credential: created.token, session: created.session_id,
          expired: "This conversation has timed out. Reload the page to start a new one.",
        });
        chat.focus();
      } catch (err) {
        // a site not among the key's origins gets no CORS grant: the browser hides why
        console.error("supportcrew widget: opening a session failed (" + err.message + "); is "
                      + window.location.origin + " among the widget key's origins?");
        const banner = element("div", { className: "banner error" },
                               "The chat cannot start: " + err.message);
        banner.setAttribute("role", "alert");
        body.replaceChildren(banner);
      }
    }

    function hide() {
      panel.hidden = true;
      launcher.setAttribute("aria-expanded", "false");
      launcher.focus();
    }

    launcher.addEventListener("click", () => (panel.hidden ? open() : hide()));
    close.addEventListener("click", hide);
    panel.addEventListener("keydown", (event) => { if (event.key === "Escape") hide(); });
  }

  if (window.SupportcrewChat) { start(); return; }
  const core = document.createElement("script");
  core.src = base + "/static/chat.js";
  core.addEventListener("load", start);
  core.addEventListener("error", () => console.error("supportcrew widget: cannot load " + core.src));
  document.head.append(core);
})();
