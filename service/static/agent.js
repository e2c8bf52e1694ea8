// The agent desk: the hand-off queue, one conversation, reply, resolve; the gap report for
// admin keys. Plain JS, no build step, same origin and CSP as the chat page.
"use strict";
const desk = { key: null, me: null, session: null, offset: 0, etag: null };
const PAGE = 20;
const $ = (id) => document.getElementById(id);

function showError(text) {
  $("error").textContent = text;
  $("error").hidden = !text;
}

async function call(path, body, extraHeaders) {
  let response;
  try {
    response = await fetch(path, {
      method: body === undefined ? "GET" : "POST",
      headers: { "Content-Type": "application/json", "Authorization": "Bearer " + desk.key,
                 ...(extraHeaders || {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new Error("The support service cannot be reached.");
  }
  if (response.status === 304) return null; // nothing changed since the last poll
  desk.lastEtag = response.headers.get("ETag");
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error((data.error && data.error.message) || "Request failed: " + response.status);
    error.status = response.status;
    throw error;
  }
  return data;
}

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

// The queue a page at a time, oldest first; polls send the last ETag and get 304 when the
// queue has not changed.
async function loadQueue(force) {
  const page = await call(`/v1/handoffs?limit=${PAGE}&offset=${desk.offset}`, undefined,
                          force || !desk.etag ? {} : { "If-None-Match": desk.etag });
  if (page === null) return;
  desk.etag = desk.lastEtag;
  const list = $("queue");
  list.replaceChildren();
  for (const row of page.handoffs) {
    const entry = document.createElement("li");
    const open = document.createElement("button");
    open.type = "button";
    const why = row.why || row.first_message || "(no message)";
    const holder = row.session.taken_by ? `taken by ${row.session.taken_by}` : "nobody has it";
    const since = row.session.handoff_at || row.session.created;
    const unanswered = row.waiting ?
      `; ${row.waiting} later message${row.waiting === 1 ? "" : "s"} unanswered` : "";
    open.textContent = `${row.customer}: “${why.slice(0, 90)}” (waiting ${ago(since)}` +
                       `${unanswered}; ${holder})`;
    open.addEventListener("click", guarded(() => openConversation(row.session.session_id)));
    entry.append(open);
    list.append(entry);
  }
  const shown = page.handoffs.length;
  $("queue-count").textContent = page.total ?
    `${page.offset + 1}-${page.offset + shown} of ${page.total} waiting, oldest first` : "";
  $("queue-newer").hidden = page.offset + shown >= page.total;
  $("queue-older").hidden = page.offset === 0;
  $("queue-empty").hidden = page.total > 0;
  $("queue-section").hidden = false;
}

// "3 min", "2 h 5 min", "4 days": how long since an epoch-seconds time.
function ago(epochSeconds) {
  const minutes = Math.max(0, Math.round((Date.now() / 1000 - epochSeconds) / 60));
  if (minutes < 60) return `${minutes} min`;
  if (minutes < 48 * 60) return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  return `${Math.floor(minutes / 1440)} days`;
}

function showSuggestion(suggestion) {
  $("suggestion").hidden = !suggestion;
  if (!suggestion) return;
  $("suggestion-for").textContent = `To: “${suggestion.message}”` +
    (suggestion.verdict === "suggest" ? " (an article that may help, not a direct answer)" : "");
  $("suggestion-text").textContent = suggestion.answer;
  const sources = $("suggestion-sources");
  sources.replaceChildren();
  for (const c of suggestion.citations) {
    sources.append(Object.assign(document.createElement("li"),
                                 { textContent: c.title ? `${c.title} (${c.source_id})` : c.source_id }));
  }
  desk.suggestion = suggestion.answer;
}

async function openConversation(sessionId) {
  const data = await call(`/v1/handoffs/${sessionId}`);
  desk.session = sessionId;
  const holder = data.session.taken_by;
  const handed = data.session.handoff_at ? `handed off ${ago(data.session.handoff_at)} ago` :
    "not handed off";
  $("conversation-meta").textContent = `Customer ${data.customer} · ${handed} · ` +
    `${data.session.status === "resolved" ? "resolved" : "open"} · ` +
    (holder ? `taken by ${holder}` : "nobody has taken it yet");
  const mine = holder === desk.me.key;
  $("take").hidden = mine;
  $("reply").hidden = !mine;
  const transcript = $("transcript");
  transcript.replaceChildren();
  for (const turn of data.turns) {
    if (turn.user) {
      const waiting = turn.status === "waiting_for_agent" ? " (waiting for you)" : "";
      transcript.append(item("user", "Customer" + waiting, turn.user));
    }
    if (turn.from === "agent") transcript.append(item("agent", `Agent ${turn.agent}`, turn.answer));
    else if (turn.answer) {
      const sources = (turn.citations || []).length ? ` [${turn.citations.join(", ")}]` : "";
      transcript.append(item("assistant", `Assistant (${turn.verdict})`, turn.answer + sources));
    }
  }
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

const SVG = "http://www.w3.org/2000/svg";
function svgNode(name, attributes, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

// One chart: per day, either lines of rates (0-1) or stacked bars of counts; days on x.
function chart(days, series, stacked) {
  const width = 640, height = 220, left = 34, bottom = 24, top = 10;
  const rows = Math.ceil(series.length / 4);
  const svg = svgNode("svg", { viewBox: `0 0 ${width} ${height + 10 + rows * 20}`, role: "img" });
  const plotW = width - left - 40, plotH = height - bottom - top; // room for the last bar
  const inset = 12;
  const totals = days.map((d) => series.reduce((sum, s) => sum + (d[s.key] || 0), 0));
  const top_ = stacked ? Math.max(1, ...totals) : 1;
  const x = (i) => left + inset +
    (days.length === 1 ? plotW / 2 : (i * (plotW - inset)) / (days.length - 1));
  const y = (v) => top + plotH - (v / top_) * plotH;
  const ticks = stacked ? [...new Set([0, Math.round(top_ / 2), top_])] : [0, 0.5, 1];
  for (const v of ticks) {
    svg.append(svgNode("line", { x1: left, x2: width - 8, y1: y(v), y2: y(v), stroke: "#dde1e6" }));
    svg.append(svgNode("text", { x: 2, y: y(v) + 4, "font-size": 11, fill: "#555" },
                       stacked ? String(v) : `${Math.round(v * 100)}%`));
  }
  const barW = Math.max(4, Math.min(28, plotW / Math.max(1, days.length) - 4));
  days.forEach((d, i) => {
    if (stacked) {
      let base = 0;
      for (const s of series) {
        const value = d[s.key] || 0;
        if (value) {
          const rect = svgNode("rect", { x: x(i) - barW / 2, y: y(base + value), width: barW,
                                         height: y(base) - y(base + value), fill: s.color });
          rect.append(svgNode("title", {}, `${d.day}: ${value} ${s.label}`));
          svg.append(rect);
        }
        base += value;
      }
    }
    if (i % Math.ceil(days.length / 6) === 0 || i === days.length - 1) {
      svg.append(svgNode("text", { x: x(i), y: height - 6, "font-size": 11, fill: "#555",
                                   "text-anchor": "middle" }, d.day.slice(5)));
    }
  });
  if (!stacked) {
    for (const s of series) {
      const points = days.map((d, i) => [i, d[s.key]]).filter(([, v]) => v !== null && v !== undefined);
      if (!points.length) continue;
      svg.append(svgNode("polyline", { points: points.map(([i, v]) => `${x(i)},${y(v)}`).join(" "),
                                       fill: "none", stroke: s.color, "stroke-width": 2.5 }));
      for (const [i, v] of points) {
        const dot = svgNode("circle", { cx: x(i), cy: y(v), r: 3.5, fill: s.color });
        dot.append(svgNode("title", {}, `${days[i].day}: ${s.label} ${Math.round(v * 100)}%`));
        svg.append(dot);
      }
    }
  }
  series.forEach((s, n) => {
    const lx = left + (n % 4) * 150, ly = height + 4 + Math.floor(n / 4) * 20;
    svg.append(svgNode("rect", { x: lx, y: ly, width: 12, height: 12, fill: s.color }));
    svg.append(svgNode("text", { x: lx + 16, y: ly + 10, "font-size": 12, fill: "#333" }, s.label));
  });
  return svg;
}

function tile(label, value) {
  const box = Object.assign(document.createElement("div"), { className: "tile" });
  box.append(Object.assign(document.createElement("strong"), { textContent: value }),
             document.createTextNode(label));
  return box;
}

const percent = (v) => (v === null || v === undefined ? "–" : `${Math.round(v * 100)}%`);

// Every day of the window, a day without conversations empty: the axis is always 30 days.
function everyDay(report, days) {
  const byDay = Object.fromEntries(report.days.map((d) => [d.day, d]));
  const start = new Date(report.since_day + "T00:00:00Z");
  return Array.from({ length: days }, (_, i) => {
    const day = new Date(start.getTime() + i * 86400000).toISOString().slice(0, 10);
    return byDay[day] || { day };
  });
}

async function loadDashboard() {
  const report = await call("/v1/reports/outcomes?days=30&limit=0");
  const days = everyDay(report, 30);
  const t = report.totals;
  $("dashboard-totals").replaceChildren(
    tile("conversations with a question", String(t.involved || 0)),
    tile("resolved by the assistant", percent(t.resolution_rate)),
    tile("handed off to a person", percent(t.handoff_rate)),
    tile("unanswered", percent(t.unanswered_rate)),
    tile(`satisfaction (${t.feedback || 0} mark${t.feedback === 1 ? "" : "s"})`,
         percent(t.satisfaction)),
  );
  $("chart-rates").replaceChildren(chart(days, [
    { key: "resolution_rate", label: "resolved", color: "#2e7d32" },
    { key: "handoff_rate", label: "handed off", color: "#1565c0" },
    { key: "unanswered_rate", label: "unanswered", color: "#c62828" },
  ], false));
  $("chart-volume").replaceChildren(chart(days, [
    { key: "confirmed", label: "confirmed", color: "#1b5e20" },
    { key: "assumed", label: "assumed", color: "#66bb6a" },
    { key: "reopened", label: "reopened", color: "#f9a825" },
    { key: "suggested", label: "article suggested", color: "#8d6e63" },
    { key: "handed_off", label: "handed off", color: "#1565c0" },
    { key: "resolved_by_person", label: "resolved by a person", color: "#64b5f6" },
    { key: "unanswered", label: "unanswered", color: "#c62828" },
    { key: "pending", label: "still going", color: "#b0bec5" },
  ], true));
  $("dashboard-section").hidden = false;
}

async function loadGaps() {
  const report = await call("/v1/reports/gaps");
  const list = $("gaps");
  list.replaceChildren();
  const largest = Math.max(1, ...report.clusters.map((c) => c.size));
  for (const cluster of report.clusters.slice(0, 10)) {
    const entry = document.createElement("li");
    const bar = Object.assign(document.createElement("meter"),
                              { min: 0, max: largest, value: cluster.size });
    bar.setAttribute("aria-label", `${cluster.size} questions`);
    const near = cluster.nearest_article ? ` (nearest article: ${cluster.nearest_article.source_id})` : "";
    const text = Object.assign(document.createElement("span"),
      { textContent: ` ${cluster.size} × ${cluster.examples.join(" / ")}${near}` });
    const write = Object.assign(document.createElement("button"),
                                { type: "button", textContent: "Draft an article" });
    write.addEventListener("click", guarded(() => draftArticle(cluster.examples)));
    entry.append(bar, text, document.createElement("br"), write);
    list.append(entry);
  }
  $("gaps-section").hidden = false;
}

// From a gap to a tested article: draft from people's replies, save (a hidden draft), check, publish.
async function draftArticle(questions) {
  const proposal = await call("/v1/articles/draft", { questions });
  desk.article = { questions, slug: null };
  $("article-for").textContent = `For: ${questions.map((q) => `“${q}”`).join(", ")}`;
  $("article-name").value = proposal.title;
  $("article-slug").value = proposal.slug;
  $("article-text").value = proposal.text;
  const sources = $("article-sources");
  sources.replaceChildren();
  for (const session of new Set(proposal.sources.map((source) => source.session_id))) {
    sources.append(Object.assign(document.createElement("li"),
      { textContent: `from the replies in conversation ${session.slice(0, 8)}` }));
  }
  $("article-status").textContent = "A draft from the replies people wrote: edit, then save.";
  $("article-check").hidden = true;
  $("article-publish").hidden = true;
  $("article-results").replaceChildren();
  $("article-section").hidden = false;
  $("article-name").focus();
}

function showArticle(record) {
  desk.article.slug = record.slug;
  const last = record.events[record.events.length - 1];
  $("article-status").textContent = `${record.id}: ${record.status} (${last.action} by ${last.by})`;
  $("article-check").hidden = false;
  const results = $("article-results");
  results.replaceChildren();
  for (const row of (record.check && record.check.rows) || []) {
    const verdict = row.answered_from_article ? "answered from the article" :
      `not answered from it (${row.verdict}${row.cited.length ? ", cites " + row.cited.join(", ") : ""})`;
    results.append(item(row.answered_from_article ? "assistant" : "user", `“${row.question}”`,
                        verdict));
  }
  $("article-publish").hidden = !(record.check && record.check.answered) ||
    record.status === "published";
}

function guarded(handler) {
  return async (event) => {
    if (event) event.preventDefault();
    try {
      await handler();
      showError("");
    } catch (err) { showError(err.message); }
  };
}

$("key-form").addEventListener("submit", guarded(async () => {
  desk.key = $("api-key").value.trim();
  desk.me = await call("/v1/me");
  await loadQueue(true);
  $("key-form").hidden = true;
  if (desk.me.role === "admin") { // agent keys do not see the reports
    await loadDashboard();
    await loadGaps();
  }
  setInterval(() => loadQueue(false).catch((err) => showError(err.message)), 10000);
}));

$("queue-newer").addEventListener("click", guarded(async () => {
  desk.offset += PAGE;
  await loadQueue(true);
}));

$("queue-older").addEventListener("click", guarded(async () => {
  desk.offset = Math.max(0, desk.offset - PAGE);
  await loadQueue(true);
}));

$("article-form").addEventListener("submit", guarded(async () => {
  const tiers = $("article-tiers").value.split(",").map((t) => t.trim()).filter(Boolean);
  const record = await call("/v1/articles", {
    slug: $("article-slug").value.trim(),
    title: $("article-name").value.trim(),
    text: $("article-text").value,
    access: $("article-access").value,
    ...(tiers.length ? { tiers } : {}),
    questions: desk.article.questions,
  });
  showArticle(record);
}));

$("article-check").addEventListener("click", guarded(async () => {
  showArticle(await call(`/v1/articles/${desk.article.slug}/check`, {}));
}));

$("article-publish").addEventListener("click", guarded(async () => {
  showArticle(await call(`/v1/articles/${desk.article.slug}/publish`, {}));
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
  await call(`/v1/sessions/${desk.session}/resolve`, { note: $("resolve-note").value.trim() });
  $("resolve-note").value = "";
  $("conversation-section").hidden = true;
  await loadQueue(true);
}));
