/** The band machine diagram: every state drawn, current/candidate highlighted on the right nodes, well-formed SVG. */
import { describe, expect, it } from "vitest";
import { bandMachine } from "../../src/actors/band-machine.ts";
import { DEFAULT_STATES, layout, machineStates, renderMachineSvg } from "../../public/static/diagram.js";
import { classes, parseXml, walk, type XmlElement } from "./xml.ts";

/** What GET /v1/machines/band answers (the route is built by the server side; the shape is the contract). */
const band = {
  id: "band",
  definition: JSON.parse(JSON.stringify(bandMachine.toJSON())) as { states: Record<string, unknown> },
  mermaid: "stateDiagram-v2",
  states: ["cold", "PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN", "UNKNOWN"],
  dwell: { entry_secs: 30, exit_secs: 120 },
};

const nodes = (svg: XmlElement): XmlElement[] => walk(svg).filter((e) => e.name === "g" && e.attrs["data-state"] !== undefined);
const nodeOf = (svg: XmlElement, state: string): XmlElement => {
  const found = nodes(svg).filter((n) => n.attrs["data-state"] === state);
  expect(found, state).toHaveLength(1);
  return found[0]!;
};
const edges = (svg: XmlElement): XmlElement[] => walk(svg).filter((e) => e.name === "path" && classes(e).includes("edge"));
const hasEdge = (svg: XmlElement, from: string, to: string): boolean =>
  edges(svg).some((e) => e.attrs["data-from"] === from && e.attrs["data-to"] === to);

describe("renderMachineSvg", () => {
  it("the definition's states are the states the route lists", () => {
    expect(Object.keys(band.definition.states)).toEqual(band.states);
    expect(machineStates(band)).toEqual(band.states);
    expect(machineStates({ definition: band.definition })).toEqual(band.states);
    expect(machineStates(null)).toEqual(DEFAULT_STATES);
  });

  it("is well-formed SVG with root id machine and one <g data-state> per state", () => {
    const svg = parseXml(renderMachineSvg(band));
    expect(svg.name).toBe("svg");
    expect(svg.attrs["id"]).toBe("machine");
    expect(svg.attrs["xmlns"]).toBe("http://www.w3.org/2000/svg");
    expect(nodes(svg).map((n) => n.attrs["data-state"])).toEqual(band.states);
    for (const n of nodes(svg)) {
      expect(n.children.some((c) => c.name === "rect")).toBe(true);
      expect(n.children.find((c) => c.name === "text")?.text).toBe(n.attrs["data-state"]);
    }
    // No inline styles (CSP): presentation comes from app.css.
    expect(walk(svg).some((e) => "style" in e.attrs)).toBe(false);
  });

  it("marks the published state current and the dwell candidate candidate, nothing else", () => {
    const svg = parseXml(renderMachineSvg(band, { current: "DRIFT", candidate: "DEPEG" }));
    expect(classes(nodeOf(svg, "DRIFT"))).toContain("current");
    expect(classes(nodeOf(svg, "DRIFT"))).not.toContain("candidate");
    expect(classes(nodeOf(svg, "DEPEG"))).toContain("candidate");
    expect(classes(nodeOf(svg, "DEPEG"))).not.toContain("current");
    for (const n of nodes(svg)) {
      const s = n.attrs["data-state"];
      if (s !== "DRIFT") expect(classes(n), s).not.toContain("current");
      if (s !== "DEPEG") expect(classes(n), s).not.toContain("candidate");
    }
    const pending = edges(svg).filter((e) => classes(e).includes("pending"));
    expect(pending.map((e) => [e.attrs["data-from"], e.attrs["data-to"]])).toEqual([["DRIFT", "DEPEG"]]);
  });

  it("marks cold current before the first sample, and nothing without highlights", () => {
    const cold = parseXml(renderMachineSvg(band, { current: "cold", candidate: null }));
    expect(classes(nodeOf(cold, "cold"))).toContain("current");
    const plain = parseXml(renderMachineSvg(band));
    expect(nodes(plain).some((n) => classes(n).includes("current") || classes(n).includes("candidate"))).toBe(false);
  });

  it("highlights a gated UNKNOWN as current while a band is being timed", () => {
    const svg = parseXml(renderMachineSvg(band, { current: "UNKNOWN", candidate: "CRITICAL" }));
    expect(classes(nodeOf(svg, "UNKNOWN"))).toContain("current");
    expect(classes(nodeOf(svg, "CRITICAL"))).toContain("candidate");
  });

  it("draws escalation and recovery between neighbours, UNKNOWN both ways, cold to every published state", () => {
    const svg = parseXml(renderMachineSvg(band));
    const graded = ["PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN"];
    for (let i = 0; i + 1 < graded.length; i++) {
      expect(hasEdge(svg, graded[i]!, graded[i + 1]!)).toBe(true);
      expect(hasEdge(svg, graded[i + 1]!, graded[i]!)).toBe(true);
    }
    expect(hasEdge(svg, "PEGGED", "DEPEG")).toBe(false);
    for (const s of graded) {
      expect(hasEdge(svg, s, "UNKNOWN")).toBe(true);
      expect(hasEdge(svg, "UNKNOWN", s)).toBe(true);
    }
    for (const s of [...graded, "UNKNOWN"]) expect(hasEdge(svg, "cold", s)).toBe(true);
    expect(edges(svg).some((e) => e.attrs["data-to"] === "cold")).toBe(false);
    expect(edges(svg)).toHaveLength(4 * 2 + 5 * 2 + 6);
    for (const e of edges(svg)) expect(e.attrs["d"]).toMatch(/^M-?[\d.]+ -?[\d.]+ [LQ]/);
  });

  it("lays cold left of the graded row in severity order, UNKNOWN apart below", () => {
    const p = layout(band.states);
    const xs = ["cold", "PEGGED", "DRIFT", "DEPEG", "CRITICAL", "BLACK_SWAN"].map((s) => p[s]!.x);
    expect([...xs].sort((a, b) => a - b)).toEqual(xs);
    expect(p["UNKNOWN"]!.y).toBeGreaterThan(p["PEGGED"]!.y + p["PEGGED"]!.h);
  });

  it("shows the dwell times and escapes what it prints", () => {
    const text = renderMachineSvg({ ...band, id: "b<&>" });
    expect(text).toContain("30 s");
    expect(text).toContain("120 s");
    expect(text).toContain("b&#60;&#38;&#62;");
    parseXml(text);
  });

  it("draws states it does not know on a row of their own", () => {
    const svg = parseXml(renderMachineSvg({ states: [...band.states, "MAINTENANCE"] }, { current: "MAINTENANCE" }));
    expect(classes(nodeOf(svg, "MAINTENANCE"))).toContain("current");
  });
});
