import { writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A small scenario starting at `t0` (wall time, so replay windows and session times are ordinary): USDC pegged for
 * 480 s (8 s at speed 60: time to sign in and register webhooks, even on a loaded machine), at 0.99 for 240 s,
 * pegged, at 0.97 for 240 s, pegged again; 5 transitions over 28 scenario minutes (PEGGED->DEPEG at ~510 s, back,
 * PEGGED->DEPEG->CRITICAL at ~1110 s, back). Returns the file's path.
 */
export function writeWebhookScenario(dir: string, t0: number): string {
  const lines: string[] = [];
  for (let s = 0; s <= 1680; s += 10) {
    const m = s >= 480 && s < 720 ? "0.9900" : s >= 1080 && s < 1320 ? "0.9700" : "1.0000";
    const ts = new Date(t0 + s * 1000).toISOString();
    lines.push(JSON.stringify({ ts, asset: "USDC", intrinsic_usd: "1", market_usd: m, oracle: { "USDC/USD": { price: m, conf: "0.0004", publish_time: ts } } }));
  }
  const path = join(dir, "webhooks.jsonl");
  writeFileSync(path, `# title: two USDC dips for the webhook tests\n${lines.join("\n")}\n`);
  return path;
}
