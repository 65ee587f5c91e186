// The band state machine as an inline SVG, drawn from GET /v1/machines/band. Pure: returns a string.
//
// The XState definition routes between published states on data (a PUBLISHED event guarded by the state the
// methodology decided), so its `on` table says "any state to any other". The diagram draws the transitions that
// carry meaning instead: cold on the left, the graded states in severity order with escalation (dwell entry) and
// recovery (dwell exit) arrows between neighbours, UNKNOWN set apart below with arrows to and from every state, and
// cold to every published state (the first accepted sample publishes any of them).

import { escapeXml } from "./format.js";

export const DEFAULT_STATES = Object.freeze(["cold", "PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN", "UNKNOWN"]);
const GRADED = ["PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN"];

const W = 840;
const ROW_Y = 170;
const UNKNOWN_Y = 310;
const BOX = { w: 110, h: 44 };
const COLD = { w: 76, h: 44 };

const r = (n) => String(Math.round(n * 10) / 10);

/** The states to draw: the route's `states` list, else the definition's state keys, else the methodology's. */
export function machineStates(band) {
  if (band && Array.isArray(band.states) && band.states.every((s) => typeof s === "string")) return band.states;
  const defStates = band && band.definition && band.definition.states;
  if (defStates && typeof defStates === "object") return Object.keys(defStates);
  return DEFAULT_STATES;
}

/** Node centres and sizes. States other than the seven known ones are laid out on a row of their own at the bottom. */
export function layout(states) {
  const pos = {};
  pos.cold = { x: 56, y: ROW_Y, ...COLD };
  GRADED.forEach((s, i) => (pos[s] = { x: 200 + i * 140, y: ROW_Y, ...BOX }));
  pos.UNKNOWN = { x: 480, y: UNKNOWN_Y, ...BOX };
  let extra = 0;
  for (const s of states) {
    if (pos[s] === undefined) pos[s] = { x: 200 + (extra++ % 5) * 140, y: UNKNOWN_Y + 80, ...BOX };
  }
  return pos;
}

/** Where the ray from a box's centre in direction (dx, dy) leaves the box. */
function exitPoint(b, dx, dy) {
  const sx = dx === 0 ? Infinity : b.w / 2 / Math.abs(dx);
  const sy = dy === 0 ? Infinity : b.h / 2 / Math.abs(dy);
  const s = Math.min(sx, sy);
  return { x: b.x + dx * s, y: b.y + dy * s };
}

/** A straight edge between two boxes, shifted sideways by `offset` so a pair of opposite edges do not overlap. */
function straight(a, b, offset) {
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const len = Math.hypot(dx, dy) || 1;
  const ux = dx / len;
  const uy = dy / len;
  const ox = -uy * offset;
  const oy = ux * offset;
  const p = exitPoint({ ...a, x: a.x + ox, y: a.y + oy }, ux, uy);
  const q = exitPoint({ ...b, x: b.x + ox, y: b.y + oy }, -ux, -uy);
  return `M${r(p.x)} ${r(p.y)} L${r(q.x)} ${r(q.y)}`;
}

function edge(from, to, d, kind, extraClass) {
  const cls = `edge edge-${kind}${extraClass ? ` ${extraClass}` : ""}`;
  return `<path class="${cls}" data-from="${escapeXml(from)}" data-to="${escapeXml(to)}" d="${d}" marker-end="url(#arrow)"/>`;
}

/**
 * Renders the machine. `current` is the machine's state value ("cold" or a published state) and gets class
 * `current`; `candidate` is the band the dwell timer is running for and gets class `candidate`. The edge from the
 * current state to the candidate (when drawn) gets class `pending`.
 */
export function renderMachineSvg(band, { current = null, candidate = null } = {}) {
  const states = machineStates(band);
  const has = new Set(states);
  const pos = layout(states);
  const edges = [];
  const add = (from, to, d, kind) => {
    if (!has.has(from) || !has.has(to)) return;
    edges.push(edge(from, to, d, kind, from === current && to === candidate ? "pending" : ""));
  };

  // Escalation (upper lane, rightwards) and recovery (lower lane, leftwards) between adjacent graded states.
  for (let i = 0; i + 1 < GRADED.length; i++) {
    const a = GRADED[i];
    const b = GRADED[i + 1];
    add(a, b, straight(pos[a], pos[b], -7), "escalate");
    add(b, a, straight(pos[b], pos[a], -7), "recover");
  }
  // To and from UNKNOWN: a pair of lanes per graded state.
  for (const s of GRADED) {
    add(s, "UNKNOWN", straight(pos[s], pos.UNKNOWN, -5), "gate");
    add("UNKNOWN", s, straight(pos.UNKNOWN, pos[s], -5), "ungate");
  }
  // cold: straight into PEGGED, arcs over the row to the others, a curve below into UNKNOWN.
  const c = pos.cold;
  add("cold", "PEGGED", straight(c, pos.PEGGED, 0), "first");
  GRADED.slice(1).forEach((s, i) => {
    const t = pos[s];
    const y0 = c.y - c.h / 2;
    const y1 = t.y - t.h / 2;
    const lift = 34 + i * 22;
    const ctrlY = (y0 + y1) / 2 - 2 * lift;
    add("cold", s, `M${r(c.x + 8)} ${r(y0)} Q${r((c.x + t.x) / 2)} ${r(ctrlY)} ${r(t.x - 12)} ${r(y1)}`, "first");
  });
  const u = pos.UNKNOWN;
  add("cold", "UNKNOWN", `M${r(c.x)} ${r(c.y + c.h / 2)} Q${r(c.x)} ${r(u.y)} ${r(u.x - u.w / 2)} ${r(u.y)}`, "first");

  const nodes = states.map((s) => {
    const p = pos[s];
    const cls = ["node", s === "cold" ? "node-cold" : "node-state"];
    if (s === current) cls.push("current");
    if (s === candidate) cls.push("candidate");
    const rx = s === "cold" ? 22 : 8;
    const label = s === "BLACK_SWAN" ? "BLACK_SWAN" : s;
    const note = s === current ? "current" : s === candidate ? "candidate" : "";
    return (
      `<g class="${cls.join(" ")}" data-state="${escapeXml(s)}">` +
      `<title>${escapeXml(s)}${note ? ` (${note})` : ""}</title>` +
      `<rect x="${r(p.x - p.w / 2)}" y="${r(p.y - p.h / 2)}" width="${p.w}" height="${p.h}" rx="${rx}"/>` +
      `<text x="${r(p.x)}" y="${r(p.y + 5)}" text-anchor="middle">${escapeXml(label)}</text>` +
      `</g>`
    );
  });

  const extraRow = states.some((s) => !DEFAULT_STATES.includes(s));
  const height = extraRow ? 460 : 380;
  const dwell = band && band.dwell ? band.dwell : null;
  const legend =
    dwell && Number.isFinite(dwell.entry_secs) && Number.isFinite(dwell.exit_secs)
      ? `escalation after ${dwell.entry_secs} s of dwell \u00b7 recovery after ${dwell.exit_secs} s`
      : "escalation and recovery are dwell-timed";
  const id = band && typeof band.id === "string" ? band.id : "band";

  return (
    `<svg xmlns="http://www.w3.org/2000/svg" id="machine" class="machine" viewBox="0 0 ${W} ${height}" role="img" aria-labelledby="machine-title">` +
    `<title id="machine-title">${escapeXml(id)} state machine</title>` +
    `<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse">` +
    `<path class="arrowhead" d="M0 0 L10 5 L0 10 z"/></marker></defs>` +
    `<g class="edges">${edges.join("")}</g>` +
    `<g class="nodes">${nodes.join("")}</g>` +
    `<text class="legend" x="${W / 2}" y="${height - 12}" text-anchor="middle">${escapeXml(legend)}</text>` +
    `</svg>`
  );
}
