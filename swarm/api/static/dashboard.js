// The dashboard's script (swarm/api/static/dashboard.html says what the page does).
// Every node has its own poll loop; a poll is abandoned after `timeout` ms (AbortController), so
// a hung node never holds the others up, and a ticker marks a node "not answering" as soon as
// its last answer is older than `timeout`.
"use strict";
const params = new URLSearchParams(location.search);
const interval = Math.max(200, Number(params.get("interval")) || 1000);
const timeout = Math.max(200, Number(params.get("timeout")) || 2000);
const keep = 60 * Math.max(1, Number(params.get("minutes")) || 5);  // seconds of history in the charts
const urls = (params.get("nodes") || location.origin).split(",").map(s => s.trim()).filter(Boolean)
  .map(s => /^\d+$/.test(s) ? `http://127.0.0.1:${s}` : s.replace(/\/+$/, ""));
const LOSS = ["repeat", "unsolicited", "invalid", "missing", "resets"];

// [header, class, what it means]: the nodes table, its tooltips and its legend
const COLUMNS = [
  ["node", "text", "the node's place in ?nodes="],
  ["API", "text api", "the node's HTTP API (where this row is read from)"],
  ["version", "text version", "the node's software version (GET /health)"],
  ["overlay", "text mono overlay", "the node's overlay address (first 16 hex digits)"],
  ["depth", "depth", "neighbourhood depth: peers at this proximity or closer are its neighbours"],
  ["radius", "radius", "storage radius: the reserve keeps chunks at this proximity or closer"],
  ["peers", "peers", "connected peers"],
  ["chunks", "chunks", "chunks in the local store"],
  ["chunks/s", "rate", "chunks stored per second since the previous poll"],
  ["reserve", "reserve", "chunks in the reserve / its capacity"],
  ["pins", "pins", "distinct pinned chunks (kept whatever the radius)"],
  ["not synced", "lag", "bin IDs its peers hold that it has not synced yet, summed over every peer and bin " +
    "it pulls: a chunk that 3 peers hold counts 3 times, so this is not a chunk count; 0 when fully synced"],
  ["behind", "behind", "seconds since it first learned of the oldest ID still not synced " +
    "(the most over its peers and bins; docs/architecture.md, 'Lag as time'); 0 s when caught up"],
  ["repeat", "loss-repeat", "chunks delivered that were already stored (sent twice)"],
  ["unsolicited", "loss-unsolicited", "deliveries it never asked for (the peer was dropped)"],
  ["invalid", "loss-invalid", "deliveries whose data did not match the address (the peer was dropped)"],
  ["missing", "loss-missing", "chunks asked for and never delivered (the peer went away or timed out)"],
  ["resets", "loss-resets", "times a peer's store was wiped (new epoch): its intervals were voided"],
  ["state", "text state", "fully synced (every pulled bin caught up), syncing, not answering (no reply " +
    `within ${timeout / 1000} s: hung or overloaded) or down (connection refused: not running)`],
];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  for (const child of children) node.append(child instanceof Node ? child : String(child ?? ""));
  return node;
}
const cell = (value, cls = "") => el("td", cls ? {class: cls} : {}, value);
const clock = ts => ts ? new Date(ts * 1000).toLocaleTimeString() : "-";
const rate = r => r === null || r === undefined ? "" : r.toFixed(r < 10 ? 1 : 0);
const seconds = s => s === undefined ? "" : s < 10 ? `${s === 0 ? 0 : s.toFixed(1)} s` :
  s < 3600 ? `${Math.floor(s / 60) ? Math.floor(s / 60) + " m " : ""}${Math.floor(s % 60)} s` :
  `${Math.floor(s / 3600)} h ${Math.floor(s % 3600 / 60)} m`;

function table(headers, rows, attrs = {}) {
  return el("table", attrs,
    el("thead", {}, el("tr", {}, ...headers.map(([h, cls, help]) =>
      el("th", {...(cls ? {class: cls} : {}), ...(help ? {title: help} : {})}, h)))),
    el("tbody", {}, ...rows));
}

async function getJson(url, signal, optional = false) {
  const response = await fetch(url, {cache: "no-store", signal});
  if (optional && response.status === 404) return null;
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return response.json();
}

// One poll of one node, abandoned after `timeout` ms.
async function sample(url) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeout);
  try {
    const get = (path, optional) => getJson(url + path, controller.signal, optional);
    const [sync, topology, health, loss] =
      await Promise.all([get("/sync"), get("/topology"), get("/health"), get("/loss", true)]);
    return {sync, topology, health, loss};
  } catch (error) {
    if (controller.signal.aborted) return {hung: true, error: `no answer within ${timeout / 1000} s`};
    // a fetch that gets no connection at all is a TypeError ("Failed to fetch")
    return {error: error instanceof TypeError ? `no connection to ${url}` : String(error.message || error)};
  } finally {
    clearTimeout(timer);
  }
}

// Per bin, over every peer: IDs synced (cursor - lag), cursors, peers, most seconds behind, latest batch.
function binProgress(sync) {
  const bins = new Map();
  for (const peer of sync.peers) {
    for (const b of peer.bins) {
      const e = bins.get(b.bin) || {synced: 0, cursor: 0, peers: 0, behind: 0, last: null};
      e.synced += b.cursor - b.lag; e.cursor += b.cursor; e.peers += 1;
      e.behind = Math.max(e.behind, b.behind_seconds ?? 0);
      if (b.last_batch && (!e.last || b.last_batch > e.last)) e.last = b.last_batch;
      bins.set(b.bin, e);
    }
  }
  return new Map([...bins].sort((x, y) => x[0] - y[0]));
}

// The charts: [title, [series label, colour, value of a sample]]
const CHARTS = [
  ["chunks stored per second", [["chunks/s", "#2a7", s => s.chunkRate]]],
  ["peers, depth and radius", [["peers", "#36c", s => s.sync.peers.length], ["depth", "#999", s => s.sync.depth],
                               ["radius", "#c73", s => s.sync.reserve?.radius ?? null]]],
  ["reserve (chunks)", [["reserve", "#85c", s => s.sync.reserve?.size ?? null]]],
  ["loss counters", LOSS.map((name, i) => [name, ["#c33", "#e80", "#a0a", "#06c", "#555"][i],
                                           s => s.sync.totals?.[name] ?? 0])],
];

class NodeView {
  constructor(url, index) {
    Object.assign(this, {url, index, name: `node ${index}`, last: null, lastAt: null, updates: 0,
                         state: "waiting", error: ""});
    this.times = [];
    this.series = CHARTS.map(([, lines]) => lines.map(() => []));
    this.row = el("tr", {"data-node": url});
    this.details = el("div");
    const charts = el("div", {class: "charts"});
    this.title = el("h2");
    this.card = el("section", {class: "node", "data-node": url}, this.title, charts, this.details);
    this.charts = typeof uPlot === "undefined" ? [] : CHARTS.map(([title, lines]) => new uPlot({
      title, width: 320, height: 130, legend: {show: true},
      series: [{}, ...lines.map(([label, stroke]) => ({label, stroke, width: 1.5}))],
      axes: [{}, {size: 48}],
    }, [[], ...lines.map(() => [])], charts));
  }

  // A poll's outcome: a sample, or why there is none.
  update(s, now) {
    if (s.error) {
      this.state = s.hung ? "not answering" : "down";
      this.error = s.error;
    } else {
      const before = this.last, secs = before ? (now - this.lastAt) / 1000 : 0;
      s.bins = binProgress(s.sync);
      s.chunkRate = secs > 0 ? Math.max(0, s.sync.chunks - before.sync.chunks) / secs : null;
      s.binRates = new Map([...s.bins].map(([bin, e]) => {
        const old = before?.bins.get(bin);
        return [bin, secs > 0 && old ? Math.max(0, e.synced - old.synced) / secs : null];
      }));
      this.last = s; this.lastAt = now; this.updates += 1;
      this.state = s.sync.fully_synced ? "fully synced" : "syncing";
      this.error = "";
    }
    this.record(s.error ? null : s, now);
    this.draw();
  }

  record(s, now) {  // a point per poll in every chart; none (a gap) while the node does not answer
    this.times.push(now / 1000);
    CHARTS.forEach(([, lines], c) => lines.forEach(([, , value], i) => this.series[c][i].push(s ? value(s) : null)));
    while (this.times.length && this.times[0] < now / 1000 - keep) {
      this.times.shift();
      this.series.forEach(lines => lines.forEach(points => points.shift()));
    }
    this.charts.forEach((chart, c) => chart.setData([this.times, ...this.series[c]]));
  }

  draw() {
    const answering = this.state === "fully synced" || this.state === "syncing";
    this.row.replaceChildren(...this.cells(answering));
    this.row.className = answering ? "" : "down";
    this.row.dataset.updates = String(this.updates);
    this.card.className = answering ? "node" : "node down";
    const s = this.last;
    this.title.replaceChildren(`${this.name} `, el("span", {class: "mono muted"}, s ? s.sync.overlay.slice(0, 16) : ""),
      ` · ${this.url}`, s ? ` · ${s.health.version}` : "",
      answering ? "" : el("span", {class: "bad"}, ` · ${this.state}`));
    this.details.replaceChildren(...(answering ? nodeDetails(s) : [el("div", {class: "bad"},
      `${this.state}: ${this.error}` + (this.lastAt ? ` (last answer ${new Date(this.lastAt).toLocaleTimeString()})` : ""))]));
  }

  cells(answering) {
    const s = this.last;
    const head = [cell(this.name, "text"), cell(this.url, "text mono api"), cell(s?.health.version ?? "", "text version"),
                  cell(s ? s.sync.overlay.slice(0, 16) : "", "text mono overlay")];
    const state = cell(answering ? this.state : `${this.state}: ${this.error}`,
                       "text state " + (this.state === "fully synced" ? "ok" : answering ? "" : "bad"));
    if (!answering) return [...head, ...COLUMNS.slice(4, -1).map(() => cell("")), state];  // no stale figures
    const sync = s.sync, r = sync.reserve || {}, totals = sync.totals || {};
    const lag = sync.peers.reduce((sum, p) => sum + p.bins.reduce((a, b) => a + b.lag, 0), 0);
    const behind = Math.max(0, ...sync.peers.flatMap(p => p.bins.map(b => b.behind_seconds ?? 0)));
    return [...head, cell(sync.depth, "depth"), cell(r.radius ?? "", "radius"), cell(sync.peers.length, "peers"),
      cell(sync.chunks, "chunks"), cell(rate(s.chunkRate), "rate"), cell(`${r.size ?? ""}/${r.capacity ?? ""}`, "reserve"),
      cell(r.pinned ?? "", "pins"), cell(lag, "lag"), cell(seconds(behind), "behind"),
      ...LOSS.map(name => cell(totals[name] ?? 0, (totals[name] ? "bad " : "") + "loss-" + name)), state];
  }
}

function nodeDetails(s) {
  const r = s.sync.reserve;
  return [
    el("div", {class: "reserve"}, r ? `reserve ${r.size}/${r.capacity} chunks (${r.size_within_radius} within ` +
      `radius ${r.radius}) · evicted ${r.evicted} · pinned ${r.pinned} · waiting for receipts ${r.pending_push}` : ""),
    el("h3", {}, "Kademlia table: peers per bin (their proximity to this node)"), kademliaTable(s),
    el("h3", {}, "pull sync per bin of its upstreams, over every peer it pulls the bin from"), syncTable(s),
    el("h3", {}, "live feeds and topics"), liveTable(s.loss),
    el("h3", {}, "recent disconnections"), disconnections(s.sync),
  ];
}

function kademliaTable(s) {
  const rows = Object.entries(s.topology.bins).filter(([, b]) => b.population).map(([key, b]) =>
    el("tr", {class: "kbin", "data-bin": key.slice(4)}, cell(key.slice(4)), cell(b.population), cell(b.connected),
       cell(b.connectedPeers.map(p => p.address.slice(0, 8)).join(" "), "text mono")));
  if (!rows.length) return el("div", {class: "muted"}, "no peers known");
  return table([["bin", "", "proximity order of the peers to this node"], ["known", "", "peers known in the bin"],
                ["connected", "", "peers connected in the bin"], ["connected peers", "text", "their overlays"]], rows);
}

function syncTable(s) {
  const rows = [];
  for (const [bin, p] of s.bins) {
    if (!p.cursor) continue;  // nothing offered in this bin yet
    const width = (100 * p.synced / p.cursor).toFixed(1);
    rows.push(el("tr", {class: "bin", "data-bin": bin}, cell(bin), cell(p.peers),
      cell(el("span", {class: "bar"}, el("span", {style: `width:${width}%`})), "text"),
      cell(`${p.synced}/${p.cursor}`, "progress"), cell(rate(s.binRates.get(bin)), "bin-rate"),
      cell(seconds(p.behind), "bin-behind"), cell(clock(p.last), "text bin-last")));
  }
  if (!rows.length) return el("div", {class: "muted"}, "nothing to sync yet");
  return table([
    ["bin", "", "bin of the upstreams' pull indexes (proximity of a chunk to the upstream)"],
    ["peers", "", "peers this node pulls the bin from"], ["progress", "text", "synced / cursors"],
    ["synced/cursor", "", "bin IDs synced / the peers' highest bin IDs, summed over those peers"],
    ["IDs/s", "", "bin IDs synced per second since the previous poll"],
    ["behind", "", "seconds since the oldest ID not synced yet became known (the most over the peers)"],
    ["last batch", "text", "when the latest batch of the bin was synced"]], rows);
}

const LIVE = [["stream", "text", "a feed (owner/topic) or a topic, as `swarm feed follow` and `swarm topic` name it"],
  ["received", "", "messages pushed to this node or published here"], ["new", "", "messages accepted (not seen before)"],
  ["repeat", "", "messages seen before (sent by more than one peer)"],
  ["not_subscribed", "", "pushed by a peer this node never told it wants the stream"],
  ["invalid", "", "bad signature, address or numbering (dropped)"],
  ["equivocations", "", "two different updates at one feed index (both kept as evidence)"],
  ["last", "text", "when the stream was last heard from"]];

function liveTable(loss) {
  if (!loss) return el("div", {class: "muted"}, "live propagation is off on this node");
  const t = loss.totals, traffic = loss.traffic;
  const line = el("div", {class: "muted live-totals"}, `followers ${loss.followers} · subscribers ${loss.subscribers} · ` +
    `lost messages ${t.msg_loss} · lost in the inbox ${t.inbox_loss} · gaps open ${t.gaps_open} · ` +
    `gaps filled ${t.gaps_filled} · dropped (queue full) ${traffic.dropped}`);
  line.title = "msg_loss: messages known to be lost (a gap never filled); inbox_loss: dropped from a full " +
    "subscriber inbox; gaps: missing sequence numbers waiting to be filled";
  const rows = (loss.streams || []).map(r => el("tr", {class: "stream"},
    ...LIVE.map(([name, cls]) => name === "last" ? cell(clock(r.last), "text") :
      cell(r[name], (cls || "") + (["repeat", "invalid", "equivocations", "not_subscribed"].includes(name) && r[name] ? " bad" : "")))));
  return el("div", {}, line, rows.length ? table(LIVE, rows, {class: "live"}) : el("div", {class: "muted"}, "no live messages yet"));
}

function disconnections(sync) {
  const gone = (sync.disconnected || []).slice(0, 5);
  if (!gone.length) return el("div", {class: "muted"}, "no disconnections");
  return table([["time", "text", "when the session ended"], ["peer", "text", "the peer's overlay"],
    ["by", "text", "who ended it: local (this node) or remote"], ["code", "text", "the goodbye code"],
    ["reason", "text", "why"], ["back", "text", "connected again since"]],
    gone.map(d => el("tr", {}, cell(clock(d.at), "text"), cell(d.overlay.slice(0, 12), "text mono"), cell(d.by, "text"),
      cell(d.code, "text"), cell(d.reason || `no reason given (${d.code})`, "text reason"),
      cell(d.connected_again ? "yes" : "no", "text"))),
    {class: "disconnections"});
}

// -- the page ------------------------------------------------------------------------------------

const nodes = urls.map((url, i) => new NodeView(url, i));
document.querySelector("#summary thead tr").replaceChildren(
  ...COLUMNS.map(([h, cls, help]) => el("th", {class: cls.split(" ")[0] === "text" ? "text" : "", title: help}, h)));
document.getElementById("legend").replaceChildren(...COLUMNS.flatMap(([h, , help]) => [el("dt", {}, h), el("dd", {}, help)]));
document.querySelector("#summary tbody").replaceChildren(...nodes.map(n => n.row));
document.getElementById("nodes").replaceChildren(...nodes.map(n => n.card));

function showStatus() {
  const silent = nodes.filter(n => n.state === "not answering").length, down = nodes.filter(n => n.state === "down").length;
  document.getElementById("status").textContent = `${nodes.length} nodes` +
    (silent ? `, ${silent} not answering` : "") + (down ? `, ${down} down` : "") +
    `, updated ${new Date().toLocaleTimeString()} (every ${interval / 1000} s, each node on its own; ` +
    `no answer within ${timeout / 1000} s: not answering)`;
}

async function poll(node) {  // each node on its own loop: one that hangs holds no other up
  try {
    node.update(await sample(node.url), Date.now());
  } catch (error) {
    node.update({error: `the page failed to draw it: ${error}`}, Date.now());
  }
  showStatus();
  setTimeout(() => poll(node), interval);
}
nodes.forEach(poll);
