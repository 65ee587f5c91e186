/**
 * Dependency direction (STYLE.md "Layering, one direction only"):
 *   methodology  <-  actors  <-  streams, store  <-  http  <-  main.ts
 * catalog and wire sit beside actors: they may use methodology only. advisory (the loop-exposure model) is pure like
 * methodology and may use methodology and wire only; streams and http read it, never the reverse. auth (pure token and login checks) uses nothing
 * of the service; delivery (SSRF guard, signing, the webhook worker) sits beside streams. The client package
 * (packages/client/src) uses the methodology and the wire formats only (src/wire: the webhook signature verifier is
 * shared with delivery), and nothing of Node; so both stay browser-safe. x402 (the agent tools' payments: configuration,
 * gate, ledger) sits beside anchor, below http; mcp (the agent-tool MCP server, /mcp and /x402/* routes) sits above http
 * and below cli: http never imports it, the service hands its routes to the API.
 * A wrong import fails `npm test`.
 */
const IO_MODULES = "^(node:)?(fs|fs/promises|net|http|https|http2|dgram|dns|tls|child_process|cluster|worker_threads|os|process|readline|vm)$";
module.exports = {
  forbidden: [
    {
      name: "methodology-is-pure",
      comment: "src/methodology is pure math: no I/O module, no Node built-in (browsers run it: packages/client) and no other src folder.",
      severity: "error",
      from: { path: "^src/methodology/" },
      to: { pathNot: "^src/methodology/|^node_modules/(decimal\\.js|canonicalize|@noble/hashes)/" },
    },
    {
      name: "methodology-no-io-modules",
      severity: "error",
      from: { path: "^src/methodology/" },
      to: { path: IO_MODULES },
    },
    {
      name: "catalog-and-wire-use-methodology-only",
      severity: "error",
      from: { path: "^src/(catalog|wire)/" },
      to: { path: "^src/(actors|streams|store|http|cli)/|^src/main\\.ts$" },
    },
    {
      name: "wire-is-pure",
      comment:
        "src/wire (JSON conventions, the webhook signature verifier) is pure and browser-safe, as packages/client runs it: " +
        "methodology and its own files, and only the packages listed here.",
      severity: "error",
      from: { path: "^src/wire/" },
      to: { pathNot: "^src/(methodology|wire)/|^node_modules/(decimal\\.js|canonicalize|@noble/hashes|@noble/ed25519)/" },
    },
    {
      name: "advisory-is-pure",
      comment: "src/advisory (loop-exposure model, cascades, privacy rule) is pure decimal math: methodology and wire only, no I/O.",
      severity: "error",
      from: { path: "^src/advisory/" },
      to: { path: "^src/(actors|streams|store|http|cli|delivery|auth|catalog|anchor)/|^src/main\\.ts$|^src/(config|clock)\\.ts$|^node_modules/(?!decimal\\.js/)" },
    },
    {
      name: "advisory-no-io-modules",
      severity: "error",
      from: { path: "^src/advisory/" },
      to: { path: IO_MODULES },
    },
    {
      name: "actors-no-io",
      comment: "actors import no store, http or nats (and no I/O module).",
      severity: "error",
      from: { path: "^src/actors/" },
      to: { path: "^src/(streams|store|http|cli)/|^src/main\\.ts$|^node_modules/(@nats-io|pg|kysely|@electric-sql|uWebSockets\\.js)/" },
    },
    {
      name: "actors-no-io-modules",
      severity: "error",
      from: { path: "^src/actors/" },
      to: { path: IO_MODULES },
    },
    {
      name: "streams-and-store-not-above",
      severity: "error",
      from: { path: "^src/(streams|store)/" },
      to: { path: "^src/(http|cli|mcp|x402)/|^src/main\\.ts$" },
    },
    {
      name: "auth-is-pure",
      comment: "auth primitives (tokens, login-widget check, magic links) depend on nothing of the service.",
      severity: "error",
      from: { path: "^src/auth/" },
      to: { path: "^src/(actors|streams|store|http|cli|delivery)/|^src/main\\.ts$" },
    },
    {
      name: "delivery-below-http",
      comment: "webhook delivery (SSRF guard, signing, the worker) sits beside streams: never above it.",
      severity: "error",
      from: { path: "^src/delivery/" },
      to: { path: "^src/(http|cli)/|^src/main\\.ts$" },
    },
    {
      name: "anchor-below-http",
      comment: "on-chain anchoring (memo format, transaction, RPC, worker) sits beside delivery: never above it.",
      severity: "error",
      from: { path: "^src/anchor/" },
      to: { path: "^src/(http|cli|delivery|streams)/|^src/main\\.ts$" },
    },
    {
      name: "http-not-above",
      severity: "error",
      from: { path: "^src/http/" },
      to: { path: "^src/(cli|mcp)/|^src/main\\.ts$" },
    },
    {
      name: "x402-below-http",
      comment: "x402 payments (gate, facilitator, ledger) use the store, anchor's fee payer, catalog and methodology: never http, mcp or cli.",
      severity: "error",
      from: { path: "^src/x402/" },
      to: { path: "^src/(actors|streams|http|mcp|cli|delivery)/|^src/main\\.ts$" },
    },
    {
      name: "mcp-below-cli",
      comment: "the agent-tool server reads through http's routes and read model; only cli and main use it.",
      severity: "error",
      from: { path: "^src/mcp/" },
      to: { path: "^src/cli/|^src/main\\.ts$" },
    },
    {
      name: "client-browser-safe",
      comment:
        "packages/client runs in browsers and depends on the service only through pure modules (the methodology, the wire formats): " +
        "no Node built-in, no server folder, only its own runtime packages.",
      severity: "error",
      from: { path: "^packages/client/src/" },
      to: {
        pathNot:
          "^packages/client/src/|^src/(methodology|wire)/|^node_modules/(openapi-fetch|openapi-typescript-helpers|@noble/ed25519|@noble/hashes|decimal\\.js|canonicalize)/",
      },
    },
    {
      name: "no-circular",
      severity: "error",
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"] },
  },
};
