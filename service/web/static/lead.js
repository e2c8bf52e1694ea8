// The lead's page (/lead): every conversation of the window by outcome (tiles that add up,
// a stacked bar per day), each tile, bar, topic, article and gap opening the list of its
// conversations, each opening its transcript with the label's evidence; the gap report and
// the article editor (draft, check, publish). Plain JS, no build step, the page's CSP.
"use strict";
const { $, call, item, element, guarded, when } = Staff;
const DAYS = 30;
const PAGE = 20;
// every label in the order a lead reads them, with the words and colours the page uses
const LABELS = [
  { key: "confirmed", name: "resolved, marked helpful", color: "#1b5e20" },
  { key: "assumed", name: "resolved, customer left", color: "#66bb6a" },
  { key: "reopened", name: "came back (reopened)", color: "#f9a825" },
  { key: "suggested", name: "article suggested", color: "#8d6e63" },
  { key: "unanswered", name: "unanswered", color: "#c62828" },
  { key: "handed_off", name: "handed off, not resolved", color: "#1565c0" },
  { key: "resolved_by_person", name: "resolved by a person", color: "#64b5f6" },
  { key: "pending", name: "still going", color: "#90a4ae" },
];
const NAME = Object.fromEntries(LABELS.map((l) => [l.key, l.name]));
const lead = { report: null, offset: 0, article: null };

const percent = (part, whole) => (whole ? `${Math.round((100 * part) / whole)}%` : "–");
const shorten = (text, n) => (text.length > n ? text.slice(0, n - 1) + "…" : text);

// -- overview: tiles and the daily chart ---------------------------------------------------
function tile(text, value, detail, onClick) {
  const box = element(onClick ? "button" : "div", { className: "lead-tile", type: "button" },
    element("strong", { textContent: value }), element("span", { textContent: text }),
    element("small", { textContent: detail }));
  if (onClick) box.addEventListener("click", guarded(onClick));
  return box;
}

// -- widget keys running low (their rolling budgets: GET /v1/reports/budgets) --------------
const LIMIT_NAMES = { sessions: "new conversations", handoffs: "hand-offs to a person",
  message_bytes: "message bytes", turns: "answered messages", searches: "searches",
  feedback: "ratings" };

async function loadBudgets() {
  const { budgets } = await call("/v1/reports/budgets");
  const low = budgets.filter((b) => b.low);
  $("budgets").hidden = !low.length;
  $("budgets").replaceChildren(...low.map((b) => element("p", {
    textContent: `Widget key ${b.key} is running low on ${LIMIT_NAMES[b.limit] || b.limit}: ` +
      `${Math.round(b.left * 100)}% of its ${b.share === "shared" ? "shared budget" :
        "share kept for new visitors"} is left; ${Math.round(b.per_hour).toLocaleString("en")} ` +
      "come back an hour. Many addresses spending it at once may be an attack: see " +
      "docs/operations.md (widget budgets)." })));
}

async function loadOverview() {
  const report = await call(`/v1/reports/outcomes?days=${DAYS}&limit=0`);
  lead.report = report;
  const whole = report.total_conversations;
  const tiles = Object.fromEntries(report.tiles.map((t) => [t.label, t]));
  $("tiles").replaceChildren(
    tile("conversations with a question", String(whole), `since ${report.since_day}`,
         () => showList({})),
    ...LABELS.map((l) => tile(l.name, `${tiles[l.key].percent}%`, `${tiles[l.key].count} of ${whole}`,
                              () => showList({ label: l.key }))),
    // two different questions: how customers rated single replies, and whether the whole
    // conversation solved their problem (the closing question)
    tile("replies rated helpful", report.totals.satisfaction === null ? "–" :
         `${Math.round(report.totals.satisfaction * 100)}%`,
         `${report.totals.helpful || 0} of ${report.totals.feedback || 0} ` +
         `mark${report.totals.feedback === 1 ? "" : "s"} on the assistant's replies`),
    tile("problem solved", report.totals.csat_rate === null || report.totals.csat_rate === undefined
      ? "–" : `${Math.round(report.totals.csat_rate * 100)}%`,
         `${report.totals.csat_yes || 0} of ${report.totals.csat_answers || 0} said yes to ` +
         "\"Did we solve your problem today?\"" +
         (report.totals.csat_skipped ? `; ${report.totals.csat_skipped} closed it unanswered ` +
          `(${Math.round((report.totals.csat_response_rate || 0) * 100)}% answered)` : "")),
  );
  $("tiles-note").textContent = tilesNote(report, tiles);
  $("window").textContent = `Last ${DAYS} days, since ${report.since_day} (UTC)`;
  $("chart").replaceChildren(chart(everyDay(report)));
  $("overview").hidden = false;
}

// What the tiles add up to, in words: never a dash where a number or "none" can be said.
function tilesNote(report, tiles) {
  const whole = report.total_conversations;
  if (!whole) return "No conversation with a question in this window yet.";
  const resolved = tiles.confirmed.count + tiles.assumed.count;
  const decided = whole - tiles.pending.count;
  const shares = `Shares of all ${whole} conversation${whole === 1 ? "" : "s"}, still-going ones ` +
    "included (each rounded on its own). ";
  if (!resolved) {
    return shares + "None was resolved by the assistant yet" +
      (decided ? ` (0% of the ${decided} decided: the API's resolution_rate).` : ".");
  }
  const rate = report.totals.resolution_rate;
  return shares + `Resolved by the assistant: ${resolved} (${percent(resolved, whole)} of all` +
    (decided ? `; ${Math.round((rate || 0) * 100)}% of the ${decided} decided ones, the API's ` +
      "resolution_rate" : "") + "), of which " +
    `${tiles.confirmed.count} (${percent(tiles.confirmed.count, resolved)}) marked helpful by the ` +
    `customer and ${report.totals.verified || 0} (${percent(report.totals.verified || 0, resolved)}) ` +
    "verified (marked helpful by a signed-in customer, or answered with the decision at least " +
    "80% sure the page answers)" + anonymousNote(report) + ".";
}

// Confirmations given only by an anonymous visitor's mark: kept out of the resolution rate.
function anonymousNote(report) {
  const anonymous = report.totals.confirmed_anonymous;
  return anonymous ? `; ${anonymous} confirmed only by an anonymous visitor's mark, kept out ` +
    "of the resolution rate (anyone can give one)" : "";
}

// Every day of the window, a day without conversations empty: the axis is always DAYS days.
function everyDay(report) {
  const byDay = Object.fromEntries(report.days.map((d) => [d.day, d]));
  const start = new Date(report.since_day + "T00:00:00Z");
  return Array.from({ length: DAYS }, (_, i) => {
    const day = new Date(start.getTime() + i * 86400000).toISOString().slice(0, 10);
    return byDay[day] || { day };
  });
}

const SVG = "http://www.w3.org/2000/svg";
function svgNode(name, attributes, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

// A stacked bar per day, one segment per label; a segment opens that day's conversations of
// that label (click, or Enter when focused).
function chart(days) {
  const width = 640, height = 230, left = 30, bottom = 22, top = 8;
  const legendRows = Math.ceil(LABELS.length / 2);
  const svg = svgNode("svg", { viewBox: `0 0 ${width} ${height + 8 + legendRows * 22}`, role: "img",
                               "aria-label": "Conversations per day, by outcome" });
  const plotW = width - left - 6, plotH = height - bottom - top;
  const totals = days.map((d) => LABELS.reduce((sum, l) => sum + (d[l.key] || 0), 0));
  const most = Math.max(1, ...totals);
  const y = (v) => top + plotH - (v / most) * plotH;
  for (const v of [...new Set([0, Math.round(most / 2), most])]) {
    svg.append(svgNode("line", { x1: left, x2: width, y1: y(v), y2: y(v), stroke: "#dde1e6" }));
    svg.append(svgNode("text", { x: 2, y: y(v) + 4, "font-size": 11, fill: "#555" }, String(v)));
  }
  const slot = plotW / days.length, barW = Math.max(3, slot * 0.7);
  days.forEach((d, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    let base = 0;
    for (const l of LABELS) {
      const value = d[l.key] || 0;
      if (!value) continue;
      const rect = svgNode("rect", { x, y: y(base + value), width: barW,
                                     height: y(base) - y(base + value), fill: l.color,
                                     tabindex: 0, class: "bar", "data-day": d.day,
                                     "data-label": l.key });
      rect.append(svgNode("title", {}, `${d.day}: ${value} ${l.name}`));
      const open = guarded(() => showList({ day: d.day, label: l.key }));
      rect.addEventListener("click", open);
      rect.addEventListener("keydown", (e) => { if (e.key === "Enter") open(e); });
      svg.append(rect);
      base += value;
    }
    if (i % 5 === 0 || i === days.length - 1) {
      svg.append(svgNode("text", { x: x + barW / 2, y: height - 6, "font-size": 11, fill: "#555",
                                   "text-anchor": "middle" }, d.day.slice(5)));
    }
  });
  LABELS.forEach((l, n) => {
    const lx = left + (n % 2) * 300, ly = height + 4 + Math.floor(n / 2) * 22;
    svg.append(svgNode("rect", { x: lx, y: ly, width: 14, height: 14, fill: l.color }));
    svg.append(svgNode("text", { x: lx + 20, y: ly + 12, "font-size": 16, fill: "#333" }, l.name));
  });
  return svg;
}

// -- the drill-down list and one transcript ------------------------------------------------
// the topic filter's value for the topics table's "other" row (the API's other=true)
const OTHER = "(other)";

function filters() {
  const query = new URLSearchParams();
  for (const name of ["label", "topic", "day", "article"]) {
    const value = $(`filter-${name}`).value;
    if (name === "topic" && value === OTHER) query.set("other", "true");
    else if (value) query.set(name, value);
  }
  return query;
}

function ensureOption(select, value, text) {
  if (value && ![...select.options].some((o) => o.value === value)) {
    select.append(element("option", { value, textContent: text || value }));
  }
}

// The list for these filters (the others cleared), scrolled into view.
async function showList(wanted) {
  for (const name of ["label", "topic", "day", "article"]) {
    const select = $(`filter-${name}`);
    if (select.tagName === "SELECT") ensureOption(select, wanted[name], wanted[name]);
    select.value = wanted[name] || "";
  }
  lead.offset = 0;
  await loadList();
  $("transcript-section").hidden = true;
  $("list-section").scrollIntoView({ block: "start" });
}

// Only the latest request's answer is shown: one that was asked for earlier (the page's first
// list, still on its way when a tile is clicked) and answers later is dropped.
let listAsked = 0;

async function loadList() {
  const wanted = filters();
  const query = new URLSearchParams(wanted);
  query.set("days", DAYS);
  query.set("limit", PAGE);
  query.set("offset", lead.offset);
  const asked = ++listAsked;
  const page = await call(`/v1/reports/outcomes?${query}`);
  if (asked !== listAsked) return;
  const rows = page.conversations.map((c) => {
    const open = element("button", { type: "button", className: "link",
                                     textContent: shorten(c.first_question, 90) });
    open.addEventListener("click", guarded(() => openTranscript(c.session_id)));
    // each cell says its column (a phone shows the row as a card, every column labelled)
    const cell = (label, ...content) => {
      const td = element("td", {}, ...content);
      td.setAttribute("role", "cell");
      td.dataset.label = label;
      return td;
    };
    const row = element("tr", {},
      cell("Outcome", element("span", { className: `label label-${c.label}`, textContent: NAME[c.label] })),
      cell("Topic", c.topic_title || "–"),
      cell("First question", open),
      cell("When", when(c.started)),
      cell("Resolved by", resolvedBy(c)));
    row.setAttribute("role", "row");
    return row;
  });
  $("list").replaceChildren(...rows);
  const shown = page.conversations.length;
  const described = [...wanted.entries()].map(([k, v]) =>
    k === "label" ? NAME[v] : k === "topic" ? `topic ${topicName(v)}` :
      k === "other" ? `topic ${topicName(OTHER)}` : `${k} ${v}`).join(", ");
  const which = described ? ` (${described})` : "";
  $("list-count").textContent = !page.matching
    ? `No conversation${which} in the last ${DAYS} days.`
    : page.matching === 1 ? `1 conversation${which}`
    : page.matching <= shown ? `${page.matching} conversations${which}, newest first`
    : `${lead.offset + 1}-${lead.offset + shown} of ${page.matching} conversations${which}, newest first`;
  $("list-older").hidden = lead.offset + shown >= page.matching;
  $("list-newer").hidden = lead.offset === 0;
}

// Who resolved a conversation, as the list's column says it: a person, the assistant, not
// yet (still going, or waiting for a person), or nobody (and why: closed without a reply,
// the customer left).
function resolvedBy(c) {
  const e = c.evidence || {};
  if (e.resolved_by) return e.resolved_by;
  if (["confirmed", "assumed"].includes(c.label)) return "the assistant";
  if (e.closed_by) return `nobody: closed by ${e.closed_by} without a reply`;
  if (e.left_at) return "nobody: the customer left";
  return c.label === "pending" || c.label === "handed_off" ? "not yet" : "nobody";
}

function topicName(id) {
  const option = [...$("filter-topic").options].find((o) => o.value === id);
  return option ? option.textContent : id;
}

// One piece of a label's evidence in words, the stored code beside it where a lead may search
// the API or the CSV for it.
function evidenceText(key, value) {
  if (value === null || value === undefined) return "–";
  const at = (ts) => (typeof ts === "number" ? ` at ${when(ts)}` : "");
  if (key === "verdict") {
    const words = Staff.verdictWords[value] || value;
    return words === value ? words : `${words} (${value})`;
  }
  if (key === "feedback") {
    return `marked ${value.rating === "up" ? "helpful" : "not helpful"}${at(value.ts)}` +
      (value.comment ? `: “${value.comment}”` : "");
  }
  if (key === "csat") return Staff.closingWords(value);
  if (key === "probability") return `${Math.round(value * 100)}% sure the page answers`;
  if (/_turn$/.test(key)) return `turn ${value}`;
  if (/_at$|_since$/.test(key) && typeof value === "number") return when(value);
  if (typeof value === "boolean") return value ? "yes" : "no";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

async function openTranscript(sessionId) {
  const data = await call(`/v1/reports/outcomes/${encodeURIComponent(sessionId)}`);
  const o = data.outcome;
  $("transcript-title").textContent = `Conversation with ${data.customer}, ${when(o.started)}`;
  $("transcript-outcome").replaceChildren(
    element("span", { className: `label label-${o.label}`, textContent: NAME[o.label] }),
    document.createTextNode(` because ${o.why}` + (o.topic_title ? ` · topic: ${o.topic_title}` : "")));
  const evidence = Object.entries(o.evidence).flatMap(([key, value]) => [
    element("dt", { textContent: key.replaceAll("_", " ") }),
    element("dd", { textContent: evidenceText(key, value) }),
  ]);
  $("transcript-evidence").replaceChildren(...evidence);
  Staff.transcript($("transcript"), data.turns, data.feedback,
                   (turn) => `Customer (turn ${turn.turn_index})`);
  $("transcript-section").hidden = false;
  $("transcript-section").scrollIntoView({ block: "start" });
}

// -- topics and articles --------------------------------------------------------------------
// A topic's (or article's) conversations by outcome, in the tiles' own words, colours and
// shares (the service's, as the tiles'): "50% resolved by a person (1)"; each opens its list.
function outcomeChips(t, wanted) {
  const counts = Object.fromEntries(t.tiles.map((x) => [x.label, x]));
  return element("td", { className: "outcomes" }, ...LABELS.filter((l) => counts[l.key].count)
    .map((l) => {
      const chip = opener(`${counts[l.key].percent}% ${l.name} (${counts[l.key].count})`,
                          { ...wanted, label: l.key });
      chip.className = `chip label-${l.key}`;
      return chip;
    }));
}

function opener(text, wanted) {
  const button = element("button", { type: "button", className: "link", textContent: text });
  button.addEventListener("click", guarded(() => showList(wanted)));
  return button;
}

async function loadTopics() {
  const { topics } = await call(`/v1/reports/topics?days=${DAYS}`);
  const select = $("filter-topic");
  select.replaceChildren(element("option", { value: "", textContent: "every topic" }));
  $("topics").replaceChildren(...topics.map((t) => {
    const value = t.topic_id || OTHER;
    select.append(element("option", { value, textContent: t.title }));
    return element("tr", {},
      element("td", {}, opener(t.title, { topic: value })),
      element("td", { textContent: String(t.conversations) }),
      outcomeChips(t, { topic: value }));
  }));
}

async function loadArticles() {
  const { articles } = await call(`/v1/reports/articles?days=${DAYS}`);
  const select = $("filter-article");
  select.replaceChildren(element("option", { value: "", textContent: "any article" }));
  $("articles").replaceChildren(...articles.map((a) => {
    select.append(element("option", { value: a.source_id, textContent: a.title }));
    return element("tr", {},
      element("td", {}, opener(a.title, { article: a.source_id })),
      element("td", { textContent: String(a.conversations) }),
      element("td", { textContent: `${a.failing_percent}% (${a.failing})` }),
      element("td", { textContent: `${a.helpful} helpful, ${a.not_helpful} not` }),
      element("td", { textContent: String(a.handoffs) }));
  }));
  if (!articles.length) {
    $("articles").append(element("tr", {}, element("td", { colSpan: 5, className: "meta",
      textContent: "No answer cited an article in this window." })));
  }
}

// -- gaps and the article editor ------------------------------------------------------------
async function loadGaps() {
  const list = $("gaps");
  // the report clusters every unanswered question: seconds, the first time
  if (!list.children.length) list.append(element("li", { className: "meta", textContent: "Loading…" }));
  let report;
  try {
    report = await call("/v1/reports/gaps");
  } catch (err) {
    list.replaceChildren(element("li", { className: "meta",
      textContent: `The knowledge gaps could not be loaded: ${err.message}` }));
    throw err;
  }
  list.replaceChildren();
  const largest = Math.max(1, ...report.clusters.map((c) => c.size));
  for (const cluster of report.clusters.slice(0, 10)) {
    const bar = element("meter", { min: 0, max: largest, value: cluster.size });
    bar.setAttribute("aria-label", `${cluster.size} questions`);
    const near = cluster.nearest_article ?
      ` (nearest article: ${cluster.nearest_article.title || cluster.nearest_article.source_id})` : "";
    const write = element("button", { type: "button", textContent: "Draft an article" });
    write.addEventListener("click", guarded(() => draftArticle(cluster.examples)));
    const item = element("li", {}, bar,
      element("span", { textContent: ` ${cluster.size} × ${cluster.examples.join(" / ")}${near}` }));
    if (cluster.above_askers.length && cluster.nearest_article) {
      item.append(element("br"), element("span", { className: "gap-above",
        textContent: `The answer exists in “${cluster.nearest_article.title || cluster.nearest_article.source_id}”, ` +
          `which these customers may not read (its ${cluster.above_askers.join(", ")})` }));
    }
    if (cluster.answered_in_reach && cluster.nearest_article) {
      item.append(element("br"), element("span", { className: "gap-in-reach",
        textContent: `The knowledge base answers this in “${cluster.nearest_article.title || cluster.nearest_article.source_id}”, ` +
          "which these customers may read: nothing to write (asked of a person, or the assistant missed it)" }));
    }
    if (cluster.addressed_by) {
      const live = new Date(cluster.addressed_by.published_at * 1000).toISOString().slice(0, 10);
      const said = cluster.status === "reopened"
        ? `Reopened: ${cluster.failed_since} questions failed after “${cluster.addressed_by.title}” went live on ${live}`
        : `Addressed by “${cluster.addressed_by.title}”, live since ${live}`;
      item.append(element("br"), element("span", { className: `gap-${cluster.status}`, textContent: said }));
    }
    // an article to write only where one is missing
    if (cluster.status !== "addressed" && !cluster.answered_in_reach) item.append(element("br"), write);
    list.append(item);
  }
  if (!report.clusters.length) {
    list.append(element("li", { className: "meta", textContent: "Nothing missing in this window." }));
  }
}

// From a gap to a tested article: draft from people's replies, save (a hidden draft), check, publish.
async function draftArticle(questions) {
  const proposal = await call("/v1/articles/draft", { questions });
  lead.article = { questions, slug: null };
  $("article-for").textContent = `For: ${questions.map((q) => `“${q}”`).join(", ")}`;
  $("article-name").value = proposal.title;
  $("article-slug").value = proposal.slug;
  $("article-text").value = proposal.text;
  // the highest level among the conversations it quotes: saving it lower is refused
  $("article-access").value = proposal.access || "public";
  $("article-sources").replaceChildren(
    ...[...new Set(proposal.sources.map((s) => s.session_id))]
      .map((session) => element("li", { textContent: `from the replies in conversation ${session.slice(0, 8)}` })),
    ...proposal.pages.map((page) => element("li", { textContent: `from the knowledge-base page ${page}` })),
    ...proposal.unsupported.map((sentence) => element("li", { textContent: `check, not in the knowledge base: “${sentence}”` })));
  $("article-status").textContent = {
    replies: "A draft from the replies people wrote: edit, then save" +
      (proposal.access && proposal.access !== "public"
        ? ` (they were written in ${proposal.access}-level conversations: so is the article).`
        : "."),
    model: proposal.unsupported.length
      ? `A model's draft from the knowledge base: ${proposal.unsupported.length} sentence(s) marked “(check: …)” are not in it; fix or remove them, then save.`
      : "A model's draft from the knowledge base, every sentence found in it: edit, then save.",
    skeleton: "Nobody replied yet: write each answer under its question, then save.",
  }[proposal.drafted_by];
  $("article-check").hidden = true;
  $("article-publish").hidden = true;
  $("article-confirm").hidden = true;
  $("article-results").replaceChildren();
  $("article-section").hidden = false;
  $("article-section").scrollIntoView({ block: "start" });
  $("article-name").focus();
}

function showArticle(record) {
  lead.article.slug = record.slug;
  lead.article.record = record;
  const last = record.events[record.events.length - 1];
  const status = $("article-status");
  status.replaceChildren(`${record.id}: ${record.status} (${last.action} by ${last.by})`);
  if (record.status === "published" && record.url) {
    // where customers (and their citations) open it; a path (pilot.public_url unset) is on
    // this service, which serves this page too: shown whole, as a link
    const live = new URL(record.url, window.location.href).href;
    status.append(". It is live at ", SupportcrewChat.withLinks(live));
  }
  $("article-check").hidden = false;
  $("article-confirm").hidden = true;
  $("article-results").replaceChildren(...((record.check && record.check.rows) || []).map((row) => {
    const verdict = row.answered_from_article ? "answered from the article" :
      `not answered from it (${row.verdict}${row.cited.length ? ", cites " + row.cited.join(", ") : ""})`;
    // what the customer would read, with the page it cites
    const reads = row.answer ? ` The customer reads: “${row.answer}”` +
      (row.cited.length ? ` (${row.cited[0]})` : "") : "";
    return item(row.answered_from_article ? "assistant" : "user", `“${row.question}”`, verdict + "." + reads);
  }));
  if (record.check_hidden) {
    $("article-results").append(item("meta", "The last check",
      "It ran under a key that reads more than yours, so yours may not read it: check again " +
      "with your key before publishing."));
  }
  const replay = record.check && record.check.replay;
  if (replay) $("article-results").append(...replayed(replay));
  $("article-publish").hidden = !(record.check && record.check.answered) ||
    record.status === "published";
}

// The check's replay: how many recent questions were asked with and without the article,
// then each of them with what the customer read before and would read after.
function replayed(replay) {
  const s = replay.summary;
  const n = replay.questions;
  const said = n ?
    `${n} recent customer question${n === 1 ? "" : "s"} near it, asked with and without it: ` +
    `${s.newly_answered} newly answered, ${s.lost} answer${s.lost === 1 ? "" : "s"} lost, ` +
    `${s.moved} from another page, ${s.same} the same.` :
    "No recent customer question is near it: nothing to replay.";
  const reply = (r) => `${Staff.verdictWords[r.verdict] || r.verdict}` +
    (r.answer ? `: “${r.answer}”` : "") + (r.pages.length ? ` (${r.pages[0]})` : "");
  // a check stored before every question was kept lists only the changed ones
  const asked = replay.asked || replay.changes;
  return [item("meta", "Replay of recent questions", said), ...asked.map((c) => {
    const entry = item(c.change === "lost" ? "user" : "assistant",
                       `“${c.question}” (${c.change.replace("_", " ")})`,
                       `Before: ${reply(c.before)}\nAfter: ${reply(c.after)}`);
    entry.classList.add("replayed");
    return entry;
  })];
}

// Publishing while some of the gap's own questions still fail the check: the lead confirms
// with those questions named (the service refuses it otherwise).
function failingQuestions(record) {
  return ((record.check && record.check.rows) || [])
    .filter((row) => !row.answered_from_article).map((row) => row.question);
}

async function publish(despite) {
  showArticle(await call(`/v1/articles/${lead.article.slug}/publish`, despite ? { despite } : {}));
  await Promise.all([loadGaps(), loadArticles(), loadTopics()]);
}

// -- wiring ---------------------------------------------------------------------------------
for (const l of LABELS) $("filter-label").append(element("option", { value: l.key, textContent: l.name }));

$("key-form").addEventListener("submit", guarded(async () => {
  Staff.key = $("api-key").value.trim();
  const me = await call("/v1/me");
  if (me.role !== "admin") throw new Error("This page is for a lead's (admin) key; agents work the queue at /agent.");
  await loadOverview();
  $("key-form").hidden = true;
  $("board").hidden = false;
  await Promise.all([loadTopics(), loadArticles(), loadList(), loadGaps(), loadBudgets()]);
}));

for (const name of ["label", "topic", "day", "article"]) {
  $(`filter-${name}`).addEventListener("change", guarded(async () => {
    lead.offset = 0;
    await loadList();
  }));
}
$("filters").addEventListener("submit", (e) => e.preventDefault());
$("filter-clear").addEventListener("click", guarded(() => showList({})));
$("list-csv").addEventListener("click", guarded(() =>
  Staff.download(`/v1/reports/outcomes.csv?${filters()}&days=${DAYS}`, "conversations.csv")));
$("list-older").addEventListener("click", guarded(async () => {
  lead.offset += PAGE;
  await loadList();
}));
$("list-newer").addEventListener("click", guarded(async () => {
  lead.offset = Math.max(0, lead.offset - PAGE);
  await loadList();
}));
$("transcript-close").addEventListener("click", () => {
  $("transcript-section").hidden = true;
  $("list-section").scrollIntoView({ block: "start" });
});

$("article-form").addEventListener("submit", guarded(async () => {
  const tiers = $("article-tiers").value.split(",").map((t) => t.trim()).filter(Boolean);
  showArticle(await call("/v1/articles", {
    slug: $("article-slug").value.trim(),
    title: $("article-name").value.trim(),
    text: $("article-text").value,
    access: $("article-access").value,
    ...(tiers.length ? { tiers } : {}),
    questions: lead.article.questions,
  }));
}));
$("article-check").addEventListener("click", guarded(async () => {
  showArticle(await call(`/v1/articles/${lead.article.slug}/check`, {}));
}));
$("article-publish").addEventListener("click", guarded(async () => {
  const failing = failingQuestions(lead.article.record);
  if (!failing.length) {
    await publish(null);
    return;
  }
  $("article-confirm-text").textContent = `${failing.length} of this gap's questions ` +
    `${failing.length === 1 ? "is" : "are"} still not answered from the article, and would ` +
    "keep failing once it is live:";
  $("article-failing").replaceChildren(...failing.map((q) => element("li", { textContent: `“${q}”` })));
  $("article-confirm").hidden = false;
  $("article-keep").focus();
}));
$("article-keep").addEventListener("click", () => {
  $("article-confirm").hidden = true;
  $("article-text").focus();
});
$("article-publish-anyway").addEventListener("click", guarded(async () => {
  await publish(failingQuestions(lead.article.record));
}));
