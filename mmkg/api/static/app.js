// The mmkg page: ask (streamed answer with citations) or search, show the evidence with grounded-object
// overlays, and draw the graph around it. Talks only to this server's API; no third-party requests.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { key: localStorage.getItem("mmkg-api-key") || "" };

function headers(extra = {}) {
  return state.key ? { ...extra, Authorization: `Bearer ${state.key}` } : extra;
}

async function api(path, options = {}) {
  const res = await fetch(path, { ...options, headers: headers(options.headers || {}) });
  if (res.status === 401) {
    $("key-label").hidden = false;
    throw new Error("this server needs an API key: enter it above");
  }
  const body = res.headers.get("content-type")?.includes("json") ? await res.json() : null;
  if (!res.ok) throw new Error(body?.error || `${res.status} ${res.statusText}`);
  return body;
}

function requestBody(extra) {
  const req = { text: $("question").value, k: Number($("k").value) || 5, ...extra };
  const [name, preset] = $("strategy").value.split(":");
  req.strategy = name;
  if (preset) req.preset = preset;
  const file = $("image").files[0];
  if (!file) return { body: JSON.stringify(req), headers: { "Content-Type": "application/json" } };
  const form = new FormData();
  form.append("request", JSON.stringify(req));
  form.append("image", file);
  return { body: form, headers: {} };
}

function status(text, error = false) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "dim";
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) node.append(c);
  return node;
}

function clock(s) {
  const m = Math.floor(s / 60);
  return `${m}:${(s - m * 60).toFixed(1).padStart(4, "0")}`;
}

// A player for a transcript chunk's recording, cued to the span it covers (a media fragment, #t=start,end): it
// starts at the cited second and pauses at the span's end. The server plays the corpus file (GET /media/{doc_id});
// where it cannot (no corpus root, the file changed), the player says so in its place.
const VIDEO = /\.(mp4|webm|mkv|mov)$/i;

function player(c) {
  const start = Math.max(0, c.t_start), end = Math.max(start, c.t_end ?? start);
  const tag = el(VIDEO.test(c.source_path) ? "video" : "audio", {
    class: "player", controls: "", preload: "metadata",
    src: `/media/${encodeURIComponent(c.doc_id)}#t=${start.toFixed(2)},${end.toFixed(2)}`,
    title: `${c.source_path}, ${clock(start)}–${clock(end)}`,
  });
  tag.addEventListener("error", async () => {
    let why = "the recording cannot be played here";
    try {
      const r = await fetch(`/media/${encodeURIComponent(c.doc_id)}`, { method: "GET", headers: { Range: "bytes=0-0" } });
      if (!r.ok) why = (await r.json()).error || why;
    } catch (e) { /* keep the general message */ }
    tag.replaceWith(el("div", { class: "where player-off" }, why));
  });
  return tag;
}

async function picture(img) {
  const box = el("span", { class: "pic" });
  const tag = el("img", { src: `/images/${img.image_id}`, alt: img.source, title: `${img.source} (click to enlarge)` });
  tag.addEventListener("click", () => box.classList.toggle("big"));  // close-set labels spread out when enlarged
  box.append(tag);
  try {
    const info = await api(`/images/${img.image_id}/objects`);
    if (info.objects.length && info.width && info.height) {
      const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
      svg.setAttribute("viewBox", `0 0 ${info.width} ${info.height}`);
      svg.setAttribute("preserveAspectRatio", "none");
      const labels = [];
      for (const o of info.objects) {
        const [x0, y0, x1, y1] = o.box;
        const r = document.createElementNS(svg.namespaceURI, "rect");
        Object.entries({ x: x0, y: y0, width: x1 - x0, height: y1 - y0, class: "overlay" })
          .forEach(([k, v]) => r.setAttribute(k, v));
        svg.append(r);
        // the label is HTML over the picture, placed in percent of it: its font is in screen pixels, so it reads
        // the same on a 4000-pixel scan shown at 320 pixels as on a thumbnail (SVG text scaled with the picture)
        const above = y0 / info.height > 0.08;
        labels.push(el("span", {
          class: `tag${above ? " above" : ""}`, title: `${o.entity_name} (${o.backend}, σ ${o.score.toFixed(2)})`,
          style: `left: ${(100 * x0 / info.width).toFixed(2)}%; top: ${(100 * (above ? y0 : y1) / info.height).toFixed(2)}%`,
        }, `${o.entity_name} ${o.score.toFixed(2)}`));
      }
      box.append(svg, ...labels);
    }
  } catch (e) { /* the picture still shows without overlays */ }
  return box;
}

// Where a supporting sentence sits in a chunk's text: at the reader's offset when the text there is the
// sentence, else its first occurrence, else a match that allows any run of whitespace between its words.
function locate(text, sentence, offset) {
  if (!sentence) return null;
  if (offset >= 0 && text.startsWith(sentence, offset)) return [offset, offset + sentence.length];
  const at = text.indexOf(sentence);
  if (at >= 0) return [at, at + sentence.length];
  const words = sentence.trim().split(/\s+/).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const m = words.length ? new RegExp(words.join("\\s+")).exec(text) : null;
  return m ? [m.index, m.index + m[0].length] : null;
}

// A chunk's whole text, its supporting sentences wrapped in <mark class="support"> (the answer's span inside
// in <mark class="answer">): nothing is cut, so a cited sentence is always there to scroll to.
function chunkBody(text, sups) {
  const ranges = [];
  for (const sup of sups) {
    const at = locate(text, sup.sentence, sup.offset ?? -1);
    if (at && !ranges.some((r) => at[0] < r.to && r.from < at[1])) ranges.push({ from: at[0], to: at[1], sup });
  }
  ranges.sort((a, b) => a.from - b.from);
  const body = el("div", { class: "chunk-text" });
  let last = 0;
  for (const { from, to, sup } of ranges) {
    body.append(text.slice(last, from));
    const said = text.slice(from, to);
    const mark = el("mark", { class: "support", "data-support": String(sup.index) });
    const span = sup.start >= 0 && sup.end > sup.start ? sup.sentence.slice(sup.start, sup.end) : "";
    const cut = span ? said.indexOf(span, said === sup.sentence ? sup.start : 0) : -1;
    if (cut >= 0) mark.append(said.slice(0, cut), el("mark", { class: "answer" }, span), said.slice(cut + span.length));
    else mark.append(said);
    body.append(mark);
    last = to;
  }
  body.append(text.slice(last));
  return body;
}

// opts.labels: the evidence numbers an answer cites these chunks by (default 1..n, the search ranks);
// opts.support: the reader's supporting sentences (marked in their chunks); opts.scored: show retrieval scores
// (search results have them; a cited chunk fetched by id has none, so nothing is shown rather than 0.000)
async function showEvidence(chunks, opts = {}) {
  const list = $("evidence");
  list.replaceChildren();
  const support = opts.support || [];
  for (const [i, c] of chunks.entries()) {
    const n = opts.labels ? opts.labels[i] : i + 1;
    const where = c.t_start != null ? ` ${clock(c.t_start)}–${clock(c.t_end ?? c.t_start)}`
      : c.page ? ` p. ${c.page}` : "";
    const score = opts.scored && typeof c.score === "number" ? ` · score ${c.score.toFixed(3)}` : "";
    const mine = support.filter((s) => (s.chunk_id ? s.chunk_id === c.chunk_id : s.label === n));
    const item = el("li", { id: `ev-${n}`, value: String(n), "data-chunk": c.chunk_id },
      el("strong", {}, c.title || c.source_path),
      el("div", { class: "where" }, `${c.source_path}${where}${score}`),
      ...(c.t_start != null ? [player(c)] : []),
      chunkBody(c.text, mine));
    for (const img of c.images) item.append(await picture(img));
    list.append(item);
  }
  $("evidence-box").hidden = chunks.length === 0;
}

// Follow a citation: scroll to the evidence and highlight its supporting sentence (the one given, else the
// first one of that evidence, else the whole item when the reader found no sentence there).
function follow(n, supportIndex = null) {
  document.querySelectorAll("#evidence li.hit").forEach((li) => li.classList.remove("hit"));
  document.querySelectorAll("#evidence mark.active").forEach((m) => m.classList.remove("active"));
  const item = $(`ev-${n}`);
  if (!item) return;
  const marks = [...item.querySelectorAll("mark.support")];
  const mark = marks.find((m) => m.dataset.support === String(supportIndex))
    || marks.find((m) => m.querySelector("mark.answer")) || marks[0];
  if (mark) {
    mark.classList.add("active");
    mark.scrollIntoView({ block: "center" });
  } else {
    item.classList.add("hit");
    item.scrollIntoView({ block: "start" });
  }
}

function citeLink(n, text, supportIndex = null) {
  const a = el("a", { href: `#ev-${n}`, class: "cite", "data-label": String(n) }, text);
  a.addEventListener("click", (ev) => { ev.preventDefault(); follow(n, supportIndex); });
  return a;
}

function showAnswer(text, citations) {
  const labels = new Map(citations.map((c) => [c.label, c]));
  const box = $("answer");
  box.replaceChildren();
  let last = 0;
  for (const m of text.matchAll(/\[(\d+)\]/g)) {
    box.append(text.slice(last, m.index));
    const n = Number(m[1]);
    box.append(labels.has(n) ? citeLink(n, `[${n}]`) : m[0]);
    last = m.index + m[0].length;
  }
  box.append(text.slice(last));
  $("answer-box").hidden = false;
}

// The answer, once: the reader's short answer with its citations and confidence (no model needed); the text a
// writing model produced only when it says more than that; and behind "why", the supporting sentences with the
// answer marked, the graph path and the reader's reason. A declined answer leads with the sentence to check
// instead, outside the disclosure, and marks its best guess as one.
function quote(sup, i) {
  const q = el("blockquote", {});
  const s = sup.sentence || "";
  if (sup.start >= 0 && sup.end > sup.start && sup.end <= s.length) {
    q.append(s.slice(0, sup.start), el("mark", {}, s.slice(sup.start, sup.end)), s.slice(sup.end));
  } else q.append(s);
  q.append(" ", citeLink(sup.label, `[${sup.label}]`, i));
  return q;
}

function showReading(data) {
  const short = $("short-answer"), box = $("reading");
  const reading = data.reading || {};
  const support = (reading.support || []).slice(0, 2);
  short.hidden = box.hidden = !data.short_answer;
  // a model's own text is shown when it wrote one; the extractive backend's text only repeats the short answer
  $("answer").hidden = Boolean(data.short_answer) && data.backend === "extractive";
  if (!data.short_answer) return;
  const type = (data.answer_type || "").replace("_", "/");
  const by = reading.model ? `, read by ${reading.model}` : "";
  const conf = el("span", { class: "conf" }, `${type}, confidence ${Number(data.confidence || 0).toFixed(2)}${by}`);
  const cites = [...new Set(support.map((sup) => sup.label))].flatMap((n, i) => [" ", citeLink(n, `[${n}]`, i)]);
  box.replaceChildren();
  if (reading.abstained && reading.guess) {
    // low confidence: lead with what a person can check, the sentence below; the guess is marked as one
    short.replaceChildren("Not stated: check the cited sentence", conf,
      el("span", { class: "guess" }, ` best guess: ${reading.guess}`));
    for (const [i, sup] of support.entries()) box.append(quote(sup, i));
  } else short.replaceChildren(data.short_answer, ...cites, conf);
  const why = el("details", { class: "why" }, el("summary", {}, "why"));
  if (!reading.abstained) for (const [i, sup] of support.entries()) why.append(quote(sup, i));
  for (const step of reading.path || []) {
    why.append(el("p", { class: "path" }, `${step.subject} → ${step.predicate} → ${step.object}` +
      (step.label ? ` [${step.label}]` : "")));
  }
  if (reading.reason) why.append(el("p", { class: "dim" }, reading.reason));
  if (why.children.length > 1) box.append(why);
}

// -- the graph around the evidence ----------------------------------------------------------------------------
// A spread-out force layout fitted to the panel; labels only where they stay readable (the evidence numbers of
// the chunks, the best-connected entities, and whatever is hovered or selected); pictures as thumbnails; a click
// opens a node's details, from which its neighbours can be added; the legend filters by kind.

const COLORS = { chunk: "#1f77b4", entity: "#ff7f0e", image: "#2ca02c" };
const TOP_LABELS = 8;  // entities labelled without hovering: the best connected in the drawing
const LAYOUT = {
  name: "cose", animate: false, fit: true, padding: 24, randomize: true, nodeDimensionsIncludeLabels: false,
  nodeRepulsion: () => 12000, idealEdgeLength: () => 70, edgeElasticity: () => 80, nodeOverlap: 16,
  gravity: 0.3, numIter: 1500, componentSpacing: 90,
};

function nodeData(n, tags) {
  const data = { id: n.id, label: n.label, kind: n.kind, key: n.key };
  if (n.leaf) data.leaf = 1;  // a date or an amount: hidden until "dates and numbers" is ticked
  if (n.kind === "image") data.img = `/images/${n.key}`;
  if (n.kind === "chunk" && tags.has(n.key)) data.tag = `[${tags.get(n.key)}]`;
  return { data };
}

function graphStyle() {
  return [
    { selector: "node", style: {
      "background-color": (n) => COLORS[n.data("kind")] || "#999", width: 12, height: 12, label: "",
      "font-size": 10, color: "#222", "text-valign": "bottom", "text-margin-y": 3, "text-wrap": "ellipsis",
      "text-max-width": "120px", "text-background-color": "#fff", "text-background-opacity": 0.85,
      "text-background-padding": "1px", "min-zoomed-font-size": 7 } },
    { selector: "node[kind = 'entity']", style: {
      width: (n) => 10 + Math.min(14, 3 * Math.sqrt(n.degree())), height: (n) => 10 + Math.min(14, 3 * Math.sqrt(n.degree())) } },
    { selector: "node[kind = 'chunk']", style: { shape: "round-rectangle", width: 22, height: 22 } },
    { selector: "node[tag]", style: { label: "data(tag)", "text-valign": "center", "text-margin-y": 0, color: "#fff",
      "text-background-opacity": 0, "font-weight": 600, width: 26, height: 22 } },
    { selector: "node[kind = 'image']", style: {
      shape: "round-rectangle", width: 42, height: 42, "background-image": "data(img)", "background-fit": "cover",
      "background-color": "#e8f3e8", "border-width": 2, "border-color": COLORS.image } },
    { selector: "node.top", style: { label: "data(label)" } },
    { selector: "node.hover, node:selected", style: {
      label: "data(label)", "z-index": 10, "font-size": 12, "text-max-width": "200px", color: "#000",
      "text-valign": "bottom", "text-margin-y": 3, "text-background-opacity": 0.95 } },
    { selector: "node:selected", style: { "border-width": 3, "border-color": "#d62728" } },
    { selector: "edge", style: { width: 1, "line-color": "#c8c8c8", "curve-style": "haystack", opacity: 0.8 } },
    { selector: "edge[kind = 'relation']", style: { width: 1.6, "line-color": "#9a6a3a", "curve-style": "bezier" } },
    { selector: "edge.hover", style: {
      label: "data(label)", "font-size": 10, color: "#5a3a1a", "text-rotation": "autorotate",
      "text-background-color": "#fff", "text-background-opacity": 0.9, "z-index": 10, width: 2.5 } },
    { selector: ".faded", style: { opacity: 0.18 } },
    { selector: ".off", style: { display: "none" } },
  ];
}

// an edge says what it means: a relation's predicate (its statement and sentence on hover), or its kind
function edgeData(e) {
  return { data: { id: `${e.source}|${e.target}`, source: e.source, target: e.target, kind: e.kind,
    label: e.label, statement: e.statement || "", sentence: e.sentence || "" } };
}

// label the best-connected entities (by their links in the drawing), so labels do not pile up
function markTop(cy) {
  cy.nodes().removeClass("top");
  cy.nodes("[kind = 'entity']").sort((a, b) => b.degree() - a.degree()).slice(0, TOP_LABELS).addClass("top");
}

function applyFilter(cy) {
  const hidden = new Set();
  for (const box of document.querySelectorAll("#graph-filter input[data-kind], #graph-filter input[data-leaves]")) {
    if (!box.checked) hidden.add(box.dataset.kind);
  }
  const leaves = document.querySelector("#graph-filter input[data-leaves]");
  for (const node of cy.nodes()) {
    const off = hidden.has(node.data("kind")) || (node.data("leaf") && leaves && !leaves.checked);
    if (off) node.addClass("off"); else node.removeClass("off");
  }
}

async function drawGraph(chunkIds, run, tags = new Map()) {
  if (!chunkIds.length) return;
  if (typeof cytoscape === "undefined") {
    $("graph-box").hidden = false;
    $("graph").textContent = "graph drawing is not installed on this server (npm was missing at setup)";
    return;
  }
  const g = await api("/subgraph", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ chunk_ids: chunkIds.slice(0, 20), max_entities: 30 }),
  });
  if (run !== state.run) return;
  $("graph-box").hidden = false;
  state.tags = tags;
  const cy = cytoscape({
    container: $("graph"),
    elements: [
      ...g.nodes.map((n) => nodeData(n, tags)),
      ...g.edges.map(edgeData),
    ],
    style: graphStyle(), minZoom: 0.2, maxZoom: 4, boxSelectionEnabled: false,
  });
  window.mmkgGraph = cy;
  markTop(cy);
  applyFilter(cy);
  cy.layout(LAYOUT).run();
  cy.on("mouseover", "node", (ev) => ev.target.addClass("hover"));
  cy.on("mouseout", "node", (ev) => ev.target.removeClass("hover"));
  cy.on("mouseover", "edge", (ev) => {
    ev.target.addClass("hover");
    const e = ev.target.data();
    if (e.kind === "relation") status(`${e.statement}: “${e.sentence}”`);
  });
  cy.on("mouseout", "edge", (ev) => ev.target.removeClass("hover"));
  cy.on("tap", "node", (ev) => selectNode(ev.target));
  cy.on("tap", (ev) => { if (ev.target === cy) closeDetails(); });
}

function focus(cy, node) {
  cy.elements().removeClass("faded");
  if (node) cy.elements().difference(node.closedNeighborhood()).addClass("faded");
}

function closeDetails() {
  $("node-details").hidden = true;
  $("node-details").replaceChildren();
  if (window.mmkgGraph) { window.mmkgGraph.nodes().unselect(); focus(window.mmkgGraph, null); }
}

function where(o) {
  const at = o.page ? ` p. ${o.page}` : o.t_s != null ? ` ${clock(o.t_s)}` : "";
  return `${o.source_path || ""}${at}`;
}

function withName(sentence, name) {
  const at = name ? sentence.toLowerCase().indexOf(name.toLowerCase()) : -1;
  return at < 0 ? [sentence] : [sentence.slice(0, at), el("mark", {}, sentence.slice(at, at + name.length)),
    sentence.slice(at + name.length)];
}

// A node's details beside the graph: a chunk's text, an entity's occurrences (the sentence that names it in each
// chunk), a picture with the documents that show it; and a button that adds the node's neighbours to the graph.
async function selectNode(node) {
  const cy = window.mmkgGraph;
  const run = state.run;
  node.select();
  focus(cy, node);
  const box = $("node-details");
  box.hidden = false;
  box.replaceChildren(el("p", { class: "dim" }, "loading…"));
  let d;
  try {
    d = await api(`/graph/node?id=${encodeURIComponent(node.id())}`);
  } catch (e) {
    box.replaceChildren(el("p", { class: "error" }, e.message));
    return;
  }
  if (run !== state.run || !node.selected()) return;
  const close = el("button", { type: "button", class: "close", title: "close" }, "×");
  close.addEventListener("click", closeDetails);
  const kind = { chunk: "chunk", entity: d.type ? `entity · ${d.type}` : "entity", image: "picture" }[d.kind];
  const parts = [el("div", { class: "head" }, el("span", { class: `chip ${d.kind}` }), el("h3", {}, d.label), close),
    el("p", { class: "dim" }, `${kind} · ${d.degree} link(s): ${d.neighbours.chunk} chunk(s), ` +
      `${d.neighbours.entity} entit${d.neighbours.entity === 1 ? "y" : "ies"}, ${d.neighbours.image} picture(s)`)];
  if (d.kind === "chunk") {
    parts.push(el("p", { class: "where" }, where(d)));
    if (state.tags?.has(d.key)) {
      const n = state.tags.get(d.key);
      parts.push(el("p", {}, "in the evidence as ", citeLink(n, `[${n}]`)));
    }
    parts.push(el("div", { class: "chunk-text" }, d.text));
  } else if (d.kind === "entity") {
    parts.push(el("p", {}, `named in ${d.neighbours.chunk} chunk(s)` + (d.occurrences.length < d.neighbours.chunk
      ? ` (the first ${d.occurrences.length})` : "")));
    const list = el("ul", { class: "occurrences" });
    for (const o of d.occurrences) {
      list.append(el("li", {}, el("strong", {}, o.title || o.source_path), el("span", { class: "where" }, ` ${where(o)}`),
        el("div", {}, ...withName(o.sentence || "", d.name))));
    }
    parts.push(list);
  } else {
    parts.push(el("img", { class: "detail-pic", src: `/images/${d.image_id}`, alt: d.source || "picture" }));
    parts.push(el("p", { class: "where" }, `${d.source} · ${d.width}×${d.height}`));
    if (d.objects.length) parts.push(el("p", {}, `objects: ${d.objects.join(", ")}`));
    const list = el("ul", { class: "occurrences" });
    for (const o of d.occurrences) {
      list.append(el("li", {}, el("strong", {}, o.title || o.source_path || ""),
        el("span", { class: "where" }, ` ${where(o)}`), o.alt_text ? el("div", {}, o.alt_text) : ""));
    }
    parts.push(list);
  }
  const drawn = node.neighborhood("node").length;
  const hidden = d.degree - drawn;
  const more = el("button", { type: "button", id: "expand" }, hidden > 0
    ? `Show neighbours (${hidden} not drawn)` : "All neighbours are drawn");
  if (hidden <= 0) more.disabled = true;
  more.addEventListener("click", () => expandNode(node, more).catch((e) => status(e.message, true)));
  parts.push(more);
  box.replaceChildren(...parts);
}

async function expandNode(node, button) {
  const cy = window.mmkgGraph;
  button.disabled = true;
  button.textContent = "adding neighbours…";
  const res = await api("/graph/expand", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ node: node.id(), known: cy.nodes().map((n) => n.id()), limit: 20 }),
  });
  if (cy !== window.mmkgGraph) return;
  const at = node.position();
  const added = cy.add([
    ...res.nodes.map((n, i) => {
      const angle = (2 * Math.PI * i) / Math.max(1, res.nodes.length);
      return { ...nodeData(n, state.tags || new Map()), position: { x: at.x + 60 * Math.cos(angle), y: at.y + 60 * Math.sin(angle) } };
    }),
    ...res.edges.filter((e) => cy.getElementById(`${e.source}|${e.target}`).empty()
      && cy.getElementById(`${e.target}|${e.source}`).empty())
      .map(edgeData),
  ]);
  markTop(cy);
  applyFilter(cy);
  cy.layout({ ...LAYOUT, randomize: false, numIter: 800 }).run();
  focus(cy, node);
  button.textContent = res.more > 0 ? `Show more neighbours (${res.more} not drawn)` : "All neighbours are drawn";
  button.disabled = res.more <= 0;
  status(`added ${added.nodes().length} neighbour(s) of ${node.data("label")}`);
}

// Every request starts from an empty page, so an answer, evidence or graph on screen always belongs to the
// last request, and an error is never shown above the result of an earlier one.
function clearResults() {
  $("answer").replaceChildren();
  $("answer").hidden = false;  // the streamed text shows while it comes; showReading hides a repeat of the answer
  $("short-answer").replaceChildren();
  $("reading").replaceChildren();
  $("evidence").replaceChildren();
  for (const id of ["answer-box", "short-answer", "reading", "evidence-box", "graph-box"]) $(id).hidden = true;
  if (window.mmkgGraph) { window.mmkgGraph.destroy(); window.mmkgGraph = null; }
  $("graph").replaceChildren();
  $("node-details").hidden = true;
  $("node-details").replaceChildren();
}

function startRun(message) {
  state.run = (state.run || 0) + 1;
  clearResults();
  status(message);
  return state.run;
}

// Run a request on a clean page; its error replaces whatever it had shown (unless a newer request took over)
function launch(fn, message) {
  const run = startRun(message);
  fn(run).catch((e) => {
    if (run !== state.run) return;
    clearResults();
    status(e.message, true);
  });
}

// The picture a query will send, shown before it is sent (read locally: nothing leaves the page until Ask)
function showPreview() {
  const file = $("image").files[0];
  const box = $("image-preview");
  box.replaceChildren();
  box.hidden = !file;
  if (!file) return;
  const img = el("img", { alt: `query picture ${file.name}`, title: file.name });
  const reader = new FileReader();
  reader.onload = () => { img.src = reader.result; };
  reader.readAsDataURL(file);
  const drop = el("button", { type: "button", class: "drop", title: "do not send this picture" }, "×");
  drop.addEventListener("click", () => { $("image").value = ""; showPreview(); });
  box.append(img, el("span", { class: "dim" }, file.name), drop);
}

async function search(run) {
  const { body, headers: h } = requestBody({});
  const res = await api("/query", { method: "POST", body, headers: h });
  if (run !== state.run) return;
  await showEvidence(res.chunks, { scored: true });
  await drawGraph(res.chunks.map((c) => c.chunk_id), run, new Map(res.chunks.map((c, i) => [c.chunk_id, i + 1])));
  const ms = res.timings_ms.total ?? res.timings_ms.total_ms;
  status(`${res.chunks.length} chunks from version ${res.version} (${res.strategy}${ms != null ? `, ${ms.toFixed(0)} ms` : ""})`);
}

async function ask(run) {
  const { body, headers: h } = requestBody({ stream: true, backend: $("backend").value });
  const res = await fetch("/ask", { method: "POST", body, headers: headers(h) });
  if (!res.ok) {
    if (res.status === 401) $("key-label").hidden = false;
    const err = await res.json().catch(() => ({}));
    throw new Error(err.error || `${res.status} ${res.statusText}`);
  }
  let text = "";
  $("answer").textContent = "";
  $("answer-box").hidden = false;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    if (run !== state.run) { reader.cancel(); return; }  // a newer request took the page
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] || "{}");
      if (event === "delta") { text += data.text; $("answer").textContent = text; }
      if (event === "error") throw new Error(data.error);
      if (event === "answer") {
        showAnswer(data.text, data.citations);
        showReading(data);
        const cited = [...data.citations].sort((a, b) => a.label - b.label);  // [1] first, as a reader expects
        const chunks = await Promise.all(cited.map((c) => api(`/chunks/${c.chunk_id}`)));
        if (run !== state.run) return;
        const support = ((data.reading || {}).support || []).map((sup, index) => ({ ...sup, index }));
        await showEvidence(chunks, { labels: cited.map((c) => c.label), support });
        await drawGraph(chunks.map((c) => c.chunk_id), run, new Map(cited.map((c) => [c.chunk_id, c.label])));
        status(`answered by ${data.backend} from version ${data.index_version} with ${data.citations.length} citation(s)`);
      }
    }
  }
}

// -- the Index view: what is served, how it was built, and what was left out ----------------------------------

function table(columns, rows) {
  const head = el("tr", {}, ...columns.map(([, title]) => el("th", {}, title)));
  const body = rows.map((r) => el("tr", {}, ...columns.map(([key, , fmt]) => {
    const v = fmt ? fmt(r[key], r) : r[key];
    return el("td", {}, v == null ? "" : v instanceof Node ? v : String(v));
  })));
  return el("div", { class: "table-wrap" }, el("table", {}, el("thead", {}, head), el("tbody", {}, ...body)));
}

const num = (v) => (typeof v === "number" ? v.toLocaleString("en") : v);

// -- documents: upload into a partition folder, remove one, and follow the server's re-index -----------------

async function sendDocuments(method, path, form) {
  // the body is read whatever the status: a 400 of an upload lists every file it refused, with the reason
  const res = await fetch(path, { method, body: form, headers: headers() });
  if (res.status === 401) throw new Error("this server needs an API key: enter it on the Ask view");
  const body = res.headers.get("content-type")?.includes("json") ? await res.json() : {};
  if (!res.ok && !body.rejected) throw new Error(body.error || `${res.status} ${res.statusText}`);
  return body;
}

function uploadForm(partitions) {
  const list = el("datalist", { id: "partition-names" }, ...partitions.map((p) => el("option", { value: p.partition })));
  const form = el("form", { id: "upload-form", class: "row" },
    el("label", {}, "partition ", el("input", { id: "upload-partition", list: "partition-names", required: "",
      placeholder: "folder name", autocomplete: "off" })),
    el("label", {}, "files ", el("input", { id: "upload-files", type: "file", multiple: "", required: "" })),
    el("label", {}, el("input", { id: "upload-overwrite", type: "checkbox" }), " replace files of the same name"),
    el("button", { type: "submit" }, "Upload"), list);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const data = new FormData();
    data.append("partition", $("upload-partition").value.trim());
    data.append("overwrite", $("upload-overwrite").checked ? "true" : "false");
    for (const f of $("upload-files").files) data.append("files", f, f.name);
    note("uploading…");
    try {
      const out = await sendDocuments("POST", "/documents", data);
      const saved = out.saved.map((f) => f.name).join(", ");
      const refused = out.rejected.map((r) => `${r.name}: ${r.reason}`).join("; ");
      note([saved ? `saved ${saved} into ${out.partition}; ${out.picked_up_by}` : "",
        refused ? `refused ${refused}` : ""].filter(Boolean).join(" · "), !saved);
      if (saved) { note("", false, "reindex-note"); followReindex(); }
    } catch (e) { note(e.message, true); }
  });
  return form;
}

function note(text, error = false, id = "upload-note") {  // the documents' status lines: what was sent, the re-index
  const line = $(id);
  if (!line) return;
  line.className = error ? "error" : "dim";
  line.textContent = text;
}

function removeButton(row) {
  const button = el("button", { class: "remove", type: "button", title: `remove ${row.source_path} from the corpus`,
    "data-path": row.source_path }, "remove");
  button.addEventListener("click", () => removeDocument(row.partition, row.source_path.slice(row.partition.length + 1)));
  return button;
}

async function removeDocument(partition, path) {
  if (!confirm(`Remove ${partition}/${path} from the corpus? The next update drops it from the index.`)) return;
  try {
    const out = await sendDocuments("DELETE", `/documents/${encodeURIComponent(partition)}/` +
      path.split("/").map(encodeURIComponent).join("/"));
    note(`removed ${partition}/${path}; ${out.picked_up_by}`);
    note("", false, "reindex-note");
    followReindex();
  } catch (e) { note(e.message, true); }
}

let following = null;
async function followReindex(from = state.served, since = Date.now()) {
  // poll the server's re-index while it runs; once idle, wait (up to 20 s) for the new version to be served, redraw
  clearTimeout(following);
  following = null;
  if (location.hash !== "#index") return;
  let r;
  try { r = await api("/index/reindex"); } catch (e) { note(e.message, true, "reindex-note"); return; }
  if (r.state === "off") { note(r.how, false, "reindex-note"); return; }
  if (r.state === "running" || r.queued) {
    const line = (r.tail || []).filter((l) => l.trim() && !l.startsWith("== ")).pop();  // not the command's header
    const now = r.running ? `updating since ${r.running.started_at} (${r.running.reason})` : "queued";
    note(`re-indexing: ${now}${line ? ` · ${line}` : ""}`, false, "reindex-note");
    const shown = document.querySelector(".reindex-status");  // the section below, drawn before the update began
    if (shown) shown.textContent = now + (r.queued ? "; another update is queued" : "");
    following = setTimeout(() => followReindex(from, Date.now()), 1500);  // the 20 s wait counts from its end
    return;
  }
  if (r.last && r.last.returncode !== 0) {
    await showIndex();
    note(`the update failed (exit ${r.last.returncode ?? "not started"}): its log is under "Re-index after uploads"`,
      true, "reindex-note");
    return;
  }
  const now = (await api("/index").catch(() => ({}))).version;
  if (now === from && Date.now() - since < 20_000) {  // published: the server loads a new version within a second
    following = setTimeout(() => followReindex(from, since), 1000);
    return;
  }
  await showIndex();
  note(now !== from ? `re-indexed: version ${now} is served` : "re-indexed: nothing new to serve", false,
    "reindex-note");
}

async function showIndex() {
  const body = $("index-body");
  $("index-status").className = "dim";
  $("index-status").textContent = "reading the index…";
  let o, accepts = false;
  try {
    [o, { documents: accepts }] = await Promise.all([api("/index/overview"), api("/index")]);
  } catch (e) {
    body.replaceChildren();
    $("index-status").className = "error";
    $("index-status").textContent = e.message;
    return;
  }
  $("index-status").textContent = "";
  state.served = o.version;
  $("version").textContent = `index ${o.version} · ${o.encoder}`;
  const counts = Object.entries(o.counts).map(([k, v]) => `${num(v)} ${k}`).join(" · ");
  const parts = [];
  if (accepts) {  // this server accepts documents (mmkg serve --corpus): the corpus folder's upload
    parts.push(el("h2", {}, "Add documents"), uploadForm(o.partitions), el("p", { id: "upload-note", class: "dim" },
      o.reindex ? "the server re-indexes after an upload" : "this server does not re-index: see GET /index/reindex"),
    el("p", { id: "reindex-note", class: "dim", role: "status" }));
  }
  parts.push(
    el("h2", {}, "Served version"),
    el("p", {}, el("code", {}, o.version), ` published ${o.created_at} · encoder ${o.encoder}`),
    el("p", { class: "dim" }, counts),
    el("h2", {}, "Last build"),
    el("p", { class: "build-status" }, o.build.status),
  );
  if (o.build.published) {
    parts.push(el("p", { class: "dim" }, `recorded ${o.build.recorded_at}: published ${o.build.published} ` +
      `(${o.build.partitions.length} partition(s))`));
  }
  if (o.build.log) {
    parts.push(el("details", {}, el("summary", {}, `${o.build.log.name} (${o.build.log.modified_at}), last lines`),
      el("pre", { class: "log" }, o.build.log.tail.join("\n"))));
  }
  if (o.reindex) {  // this server re-indexes after uploads (mmkg serve --corpus): its update's state
    const r = o.reindex;
    const last = r.last ? `last update ${r.last.finished_at}: ${r.last.returncode === 0 ? "published" :
      `failed (exit ${r.last.returncode ?? "not started"})`}${r.last.seconds ? ` in ${r.last.seconds} s` : ""}` : "";
    const now = r.state === "running" ? `updating since ${r.running.started_at} (${r.running.reason})` +
      (r.queued ? "; another update is queued" : "") : "no update running";
    parts.push(el("h2", {}, "Re-index after uploads"), el("p", { class: "reindex-status" }, now),
      last ? el("p", { class: "dim" }, last) : "");
    if (r.tail.length) {
      parts.push(el("details", {}, el("summary", {}, `${r.log}, last lines`), el("pre", { class: "log" },
        r.tail.join("\n"))));
    }
  }
  parts.push(el("h2", {}, `Partitions (${o.partitions.length})`), table([
    ["partition", "partition"], ["documents", "documents", num], ["chunks", "chunks", num],
    ["pictures", "pictures", num], ["rejected", "rejected or cut", num],
    ["published_digest", "published digest", (v) => el("code", {
      title: `${v}: a digest of what this partition published, not the corpus folder's fingerprint that ` +
        "mmkg index status compares" }, v.slice(0, 12))],
  ], o.partitions));
  parts.push(el("h2", {}, `Versions (${o.versions.length}, newest first)`), table([
    ["version", "version", (v, r) => el("span", {}, el("code", {}, v), r.current ? el("strong", {}, " · served") : "")],
    ["created_at", "published"],
    ["partitions", "partitions", (v, r) => (r.error ? el("span", { class: "error" }, r.error) : (v || []).join(", "))],
    ["counts", "chunks", (v) => num(v?.chunks)],
  ], o.versions));
  const removable = (r) => accepts && r.source_path.startsWith(`${r.partition}/`) && !/[#!]/.test(r.source_path);
  const docs = table([
    ["partition", "partition"], ["source_path", "file"], ["title", "title"], ["kind", "kind"], ["chunks", "chunks", num],
    ...(accepts ? [["doc_id", "", (v, r) => removable(r) ? removeButton(r) : ""]] : []),
  ], o.documents.rows);
  parts.push(el("h2", {}, `Documents (${num(o.documents.total)})`),
    o.documents.total > 30 ? el("details", {}, el("summary", {}, "show them"), docs) : docs);
  if (o.documents.total > o.documents.rows.length) {
    parts.push(el("p", { class: "dim" }, `the first ${o.documents.rows.length} are listed`));
  }
  const stages = Object.entries(o.rejected.by_stage).map(([k, v]) => `${v} ${k}`).join(", ");
  parts.push(el("h2", {}, `Rejected, cut or repaired (${num(o.rejected.total)})`));
  if (o.rejected.total) {
    parts.push(el("p", { class: "dim" }, `${stages}; all of them: mmkg sql "SELECT * FROM rejected_files"`),
      table([["partition", "partition"], ["source_path", "file"], ["record_key", "record"], ["stage", "stage"],
        ["reason", "reason"]], o.rejected.rows));
  } else parts.push(el("p", { class: "dim" }, "none: every file was read as it is"));
  body.replaceChildren(...parts);
  if (o.reindex && (o.reindex.state === "running" || o.reindex.queued) && !following) followReindex();
}

function route() {
  const index = location.hash === "#index";
  $("ask-view").hidden = index;
  $("index-view").hidden = !index;
  $("tab-ask").classList.toggle("current", !index);
  $("tab-index").classList.toggle("current", index);
  if (index) showIndex();
}

async function init() {
  $("api-key").value = state.key;
  $("api-key").addEventListener("change", () => {
    state.key = $("api-key").value;
    localStorage.setItem("mmkg-api-key", state.key);
    init();
  });
  try {
    const info = await api("/index");
    $("version").textContent = `index ${info.version} · ${info.encoder}`;
    $("backend").replaceChildren(...info.backends.map((b) => el("option", b === info.default_backend ? { selected: "" } : {}, b)));
    const strategies = await api("/strategies");
    $("strategy").replaceChildren(...strategies.flatMap((s) => s.presets.map((p) =>
      el("option", { value: `${s.name}:${p}`, title: s.summary }, `${s.name}:${p}`))));
    $("strategy").value = "mg2:auto";
    status("ready");
  } catch (e) { status(e.message, true); }
}

$("ask-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  launch(ask, "retrieving and writing the answer…");
});
$("search").addEventListener("click", () => launch(search, "searching…"));
$("image").addEventListener("change", showPreview);
for (const box of document.querySelectorAll("#graph-filter input[data-kind], #graph-filter input[data-leaves]")) {
  box.addEventListener("change", () => window.mmkgGraph && applyFilter(window.mmkgGraph));
}
window.addEventListener("hashchange", route);
route();
$("graph-fit").addEventListener("click", () => window.mmkgGraph?.fit(undefined, 24));
init();
