/**
 * The typed REST client (`@peg-oracle/client`) against a running service.
 *
 *   npm start                                              # in another terminal
 *   node --import tsx examples/client-rest.ts [BASE_URL]   # default http://localhost:8080
 *
 * Prints how many assets are tracked, one asset's card (its discount parsed exactly), the peg feed's worst signal,
 * the latest transitions, the methodology in force, and how a failed call surfaces (an `ApiError` with a typed
 * `code`). Exit 0, or 1 when the service cannot be reached. `test/client/service.test.ts` runs `restTour` against a
 * started service and checks every call it makes against the OpenAPI document.
 */
import { fileURLToPath } from "node:url";
import { ApiError, PegClient, parseDecimal } from "@peg-oracle/client";

/** Every REST call of this example, printing one line per finding. */
export async function restTour(client: PegClient, print: (line: string) => void): Promise<void> {
  const assets = await client.get("/v1/assets");
  print(`${assets.count} assets tracked`);

  const symbol = assets.data.find((a) => a.symbol === "USDC")?.symbol ?? assets.data[0]?.symbol;
  if (symbol !== undefined) {
    const card = await client.get("/v1/assets/{symbol}", { params: { path: { symbol } } });
    // Decimals arrive as strings; parseDecimal keeps every digit (no float on the way).
    const bps = parseDecimal(card.discount)?.times(10_000).toDecimalPlaces(2).toFixed() ?? "-";
    print(`${card.symbol}: ${card.state ?? "no data yet"}, discount ${card.discount ?? "-"} (${bps} bps), risk score ${card.risk_score ?? "-"}`);
  }

  const feed = await client.get("/v1/peg/feed");
  const worst = [...feed.data].sort((a, b) => (b.risk_score ?? -1) - (a.risk_score ?? -1))[0];
  if (worst !== undefined) print(`peg feed (methodology ${feed.methodology}): highest risk ${worst.symbol} ${worst.state} score ${worst.risk_score ?? "-"}`);

  const alerts = await client.get("/v1/alerts", { params: { query: { limit: 5 } } });
  print(`${alerts.count} recent transitions`);
  for (const a of alerts.data) print(`  ${a.detected_at} ${a.asset} ${a.from_state} -> ${a.to_state} ${a.id}`);

  const methodology = await client.get("/v1/methodology/current");
  print(`methodology ${methodology.version} (${methodology.status})`);

  try {
    await client.get("/v1/assets/{symbol}", { params: { path: { symbol: "NOT-A-TOKEN" } } });
  } catch (e) {
    // Branch on the code, never on the message.
    if (!(e instanceof ApiError) || e.code !== "asset_not_found") throw e;
    print(`an unknown symbol: ApiError ${e.code} (HTTP ${e.status}, asset ${e.asset ?? "-"})`);
  }
}

async function main(): Promise<number> {
  const baseUrl = process.argv[2] ?? "http://localhost:8080";
  const client = new PegClient({ baseUrl });
  try {
    await restTour(client, (line) => process.stdout.write(`${line}\n`));
    return 0;
  } catch (e) {
    if (e instanceof ApiError && e.code === "network_error") {
      process.stderr.write(`cannot reach ${baseUrl} (is \`npm start\` running?): ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
