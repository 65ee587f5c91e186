/** Browser agents: CORS lets an allowed origin send x402 payments and MCP requests and read the x402 headers. */
import { describe, expect, it } from "vitest";
import { corsHeaders, preflight } from "../../src/http/cors.ts";

const origins = new Set(["https://agent.example.com"]);

describe("CORS for the agent tools", () => {
  it("a preflight allows PAYMENT-SIGNATURE and MCP-Protocol-Version; answers expose PAYMENT-REQUIRED and PAYMENT-RESPONSE", () => {
    const pf = preflight(origins, "https://agent.example.com", "Payment-Signature, MCP-Protocol-Version, content-type, x-evil", "POST, OPTIONS");
    expect(pf?.["access-control-allow-headers"]).toBe("payment-signature, mcp-protocol-version, content-type");
    const exposed = corsHeaders(origins, "https://agent.example.com")["access-control-expose-headers"]!.split(", ");
    expect(exposed).toEqual(expect.arrayContaining(["payment-required", "payment-response", "x-request-id"]));
    expect(corsHeaders(origins, "https://other.example.com")).toEqual({});
  });

  it("a browser reads why a history window older than what is kept is empty", () => {
    const exposed = corsHeaders(origins, "https://agent.example.com")["access-control-expose-headers"]!.split(", ");
    expect(exposed).toEqual(expect.arrayContaining(["x-history-reason", "x-history-kept-from"]));
  });
});
