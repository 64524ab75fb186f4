// tierdb status page: fetches /status.json every second and fills the tables.
"use strict";

function num(v, digits) {
  if (v === null || v === undefined) return "–";
  if (typeof v !== "number") return String(v);
  return v.toLocaleString("en-US", { maximumFractionDigits: digits === undefined ? 1 : digits });
}
function pct(v) { return num(100 * v, 1) + " %"; }

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function fill(id, rows, columns, emptyText, rowClass) {
  const body = document.querySelector("#" + id + " tbody");
  const out = [];
  for (const r of rows) {
    const tr = document.createElement("tr");
    if (rowClass) tr.className = rowClass(r);
    for (const c of columns) {
      const v = c(r);
      tr.appendChild(Array.isArray(v) ? cell(v[0], v[1]) : cell(v));
    }
    out.push(tr);
  }
  if (out.length === 0) {
    const tr = document.createElement("tr");
    const td = cell(emptyText, "empty");
    td.colSpan = document.querySelectorAll("#" + id + " thead th").length;
    tr.appendChild(td);
    out.push(tr);
  }
  body.replaceChildren(...out);
}

function duration(s) {
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
  return (h ? h + " h " : "") + m + " min";
}

function render(s) {
  document.getElementById("summary").textContent =
    "version " + s.version + " · up " + duration(s.uptimeSeconds) + " · " + s.connections + " connections · QoS " +
    (s.qos ? "on (threshold " + s.threshold + ", parallelism " + (s.parallelism || "unbounded") + ")" : "off");

  fill("tiers", s.tiers, [
    t => t.name, t => num(t.inProcess, 0), t => num(t.waiting, 0), t => num(t.admittedPerSec),
    t => num(t.meanLatencyMs, 2), t => num(t.waitP50Ms, 2), t => num(t.waitP99Ms, 2), t => num(t.waitMaxMs, 2),
    t => num(t.admitted, 0),
  ], "no tiers", t => t.name);

  fill("users", s.users, [
    u => [u.name, "text"], u => u.tier, u => num(u.opsPerSec), u => pct(u.share), u => num(u.weight, 2),
    u => num(u.waiting, 0), u => num(u.inProcess, 0),
    u => u.slo ? [u.slo, u.slo === "met" ? "good" : "bad"] : "–",
    u => u.slo ? num(u.p999Ms, 1) + " / " + num(u.objectiveMs, 1) : "–",
  ], "no user has run anything yet", u => u.tier);

  fill("backends", s.tiers, [
    t => t.name, t => t.nice === null ? "–" : num(t.nice, 0), t => t.ioPriority || "–",
    t => t.backendsInUse + " / " + t.backendsOpen,
    t => [(t.backends || []).map(b => b.pid + ": " + (b.nice === null ? "?" : b.nice)).join("  ") || "none", "text"],
  ], "no backends", t => t.name);

  document.getElementById("balance").textContent = s.balanceFraction === null ? "" :
    "· balance fraction " + pct(s.balanceFraction) + " of adaptive reads to standbys";
  fill("replicas", s.replicas, [
    r => r.name, r => [r.role, r.up ? "" : "bad"], r => num(r.lagBytes, 0),
    r => r.role === "primary" ? "–" : num(r.stalenessMs, 0), r => num(r.readsPerSec), r => pct(r.readShare),
    r => num(r.readsServed, 0),
  ], "no replicas (started without --replicas or --standby-urls)");

  document.getElementById("slowms").textContent = s.slowMs > 0 ? "· over " + s.slowMs + " ms, the last 20 (/status.json has up to 100)" : "· slow log off (--slow-ms 0)";
  fill("slow", s.slowOps.slice(0, 20), [
    o => new Date(o.time).toLocaleTimeString(), o => [o.user, "text"], o => o.tier, o => o.command,
    o => [o.db + (o.collection ? "." + o.collection : ""), "text"], o => num(o.durationMs, 1),
    o => [o.plan || "–", "text"], o => o.errorCode ? String(o.errorCode) : "",
  ], "none");
}

async function refresh() {
  const state = document.getElementById("state");
  try {
    const r = await fetch("/status.json", { cache: "no-store" });
    if (!r.ok) throw new Error(r.status + " " + r.statusText);
    render(await r.json());
    state.textContent = "live · " + new Date().toLocaleTimeString();
    state.className = "state ok";
  } catch (e) {
    state.textContent = "unreachable: " + e.message;
    state.className = "state err";
  }
  setTimeout(refresh, 1000);
}
refresh();
