/**
 * The agent server's resources: the methodology (its text, this build's lifecycle entry, the decisions taken where
 * the text is open) and the asset catalog. Read-only, the same for every caller; files are read once.
 */
import { readFileSync } from "node:fs";
import { McpError, type Resource, type ResourceTemplate } from "@modelcontextprotocol/sdk/types.js";
import { catalogRow, type Catalog } from "../catalog/index.ts";
import { okBody, type ApiCaller } from "./api.ts";

/** One resource and how to read it. */
export interface ResourceDef extends Resource {
  read(): Promise<string>;
}

/**
 * A family of resources named by a URI template (RFC 6570 level 1) and how to read one of them: `read` answers null
 * when the URI does not fit the template, and throws `resourceNotFound` when it fits but names nothing.
 */
export interface ResourceTemplateDef extends ResourceTemplate {
  read(uri: string): Promise<string> | null;
}

/** MCP server/resources, Error Handling: "Resource not found" is the JSON-RPC error -32002, with the URI as data. */
export const RESOURCE_NOT_FOUND = -32002;

export function resourceNotFound(uri: string, why: string): McpError {
  return new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${why}`, { uri: uri.slice(0, 200) });
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

/** The URI template of the asset cards; `{symbol}` is a catalog symbol, percent-encoded where needed. */
export const ASSET_CARD_TEMPLATE = "peg-oracle://assets/{symbol}";
const ASSET_CARD_PREFIX = "peg-oracle://assets/";

/** One template per asset card: `peg-oracle://assets/USDC` reads what `GET /v1/assets/USDC` (and `get_peg_state`) answer. */
export function resourceTemplates(api: ApiCaller): ResourceTemplateDef[] {
  return [
    {
      uriTemplate: ASSET_CARD_TEMPLATE,
      name: "asset-card",
      title: "An asset's peg card",
      description:
        "One tracked asset's current peg card, as GET /v1/assets/{symbol} serves it: state, discount (decimal string), risk_score, anchor, thresholds and the latest alert. {symbol} is a catalog symbol such as USDC (list_assets or peg-oracle://catalog name them).",
      mimeType: "application/json",
      read: (uri) => {
        if (!uri.startsWith(ASSET_CARD_PREFIX)) return null;
        const segment = uri.slice(ASSET_CARD_PREFIX.length);
        if (segment === "" || segment.includes("/") || segment.includes("?") || segment.includes("#")) return null;
        return (async () => {
          let symbol: string;
          try {
            symbol = decodeURIComponent(segment);
          } catch {
            throw resourceNotFound(uri, "malformed percent-encoding in the symbol");
          }
          const a = await api.get(`/v1/assets/${encodeURIComponent(symbol)}`);
          if (a.status === 200) return JSON.stringify(a.body);
          if (a.status === 400 || a.status === 404) throw resourceNotFound(uri, `no active asset ${JSON.stringify(symbol.slice(0, 64))}; list_assets names them`);
          const body = (a.body ?? {}) as Record<string, unknown>;
          throw new Error(`GET /v1/assets/{symbol} answered ${a.status}: ${typeof body["message"] === "string" ? body["message"] : ""}`);
        })();
      },
    },
  ];
}

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
