import { writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A small scenario starting at `t0` (wall time, so replay windows and session times are ordinary): USDC pegged for
 * 300 s, at 0.99 for 240 s, pegged, at 0.97 for 240 s, pegged again; 5 transitions over 25 scenario minutes
 * (PEGGED->DEPEG at ~330 s, back, PEGGED->DEPEG->CRITICAL at ~930 s, back). Returns the file's path.
 */
export function writeWebhookScenario(dir: string, t0: number): string {
  const lines: string[] = [];
  for (let s = 0; s <= 1500; s += 10) {
    const m = s >= 300 && s < 540 ? "0.9900" : s >= 900 && s < 1140 ? "0.9700" : "1.0000";
    const ts = new Date(t0 + s * 1000).toISOString();
    lines.push(JSON.stringify({ ts, asset: "USDC", intrinsic_usd: "1", market_usd: m, oracle: { "USDC/USD": { price: m, conf: "0.0004", publish_time: ts } } }));
  }
  const path = join(dir, "webhooks.jsonl");
  writeFileSync(path, `# title: two USDC dips for the webhook tests\n${lines.join("\n")}\n`);
  return path;
}
