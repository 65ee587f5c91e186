/**
 * The agent server's resources: the methodology (its text, this build's lifecycle entry, the decisions taken where
 * the text is open) and the asset catalog. Read-only, the same for every caller; files are read once.
 */
import { readFileSync } from "node:fs";
import type { Resource } from "@modelcontextprotocol/sdk/types.js";
import { catalogRow, type Catalog } from "../catalog/index.ts";
import { okBody, type ApiCaller } from "./api.ts";

/** One resource and how to read it. */
export interface ResourceDef extends Resource {
  read(): Promise<string>;
}

const docText = (name: string): (() => Promise<string>) => {
  let text: string | null = null;
  return async () => (text ??= readFileSync(new URL(`../../docs/${name}`, import.meta.url), "utf8"));
};

export const RESOURCE_URIS = {
  methodology: "peg-oracle://methodology",
  methodologyStatus: "peg-oracle://methodology/current",
  methodologyNotes: "peg-oracle://methodology/notes",
  catalog: "peg-oracle://catalog",
} as const;

export function resources(api: ApiCaller, catalog: Catalog): ResourceDef[] {
  return [
    {
      uri: RESOURCE_URIS.methodology,
      name: "methodology",
      title: "Peg-risk methodology 1.0.0",
      description:
        "The rules behind every peg state, discount and receipt: the per-tick pipeline (raw discount, plausibility, EWMA), class-aware bands with a Schmitt deadband, entry and exit dwell, the sanity and oracle gates, risk_score, and what a receipt hashes.",
      mimeType: "text/markdown",
      read: docText("methodology.md"),
    },
    {
      uri: RESOURCE_URIS.methodologyStatus,
      name: "methodology-current",
      title: "This build's methodology version and status",
      description: "The lifecycle entry of the methodology this server implements (version, status, superseded_by), as /v1/methodology/current serves it.",
      mimeType: "application/json",
      read: async () => JSON.stringify(okBody(await api.get("/v1/methodology/current"))),
    },
    {
      uri: RESOURCE_URIS.methodologyNotes,
      name: "methodology-notes",
      title: "Methodology decisions",
      description: "Decisions this implementation took where the methodology text is open.",
      mimeType: "text/markdown",
      read: docText("methodology-notes.md"),
    },
    {
      uri: RESOURCE_URIS.catalog,
      name: "catalog",
      title: "Asset catalog",
      description:
        "Every asset in the catalog (active and inactive) with its mint, class, anchor (USD, FX or NAV), risk side, calibration and thresholds (bps, or collateral-ratio percent), as `peg-oracle catalog --json --all` prints them.",
      mimeType: "application/json",
      read: async () => JSON.stringify({ version: catalog.version, assets: catalog.all.map(catalogRow) }),
    },
  ];
}
