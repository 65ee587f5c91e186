import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Calibration } from "../../src/catalog/index.ts";
import type { Service } from "../../src/cli/service.ts";
import { decideDispatch, type PriorSend } from "../../src/delivery/index.ts";
import type { AlertRecord } from "../../src/store/index.ts";

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

/**
 * The stored alerts of `mint` that the dispatch rules send to a target with `thresholdBps`, oldest first: what a
 * webhook or subscription registered before the first transition must receive.
 */
export async function qualifyingAlerts(service: Service, mint: string, calibration: Calibration, thresholdBps = 10): Promise<AlertRecord[]> {
  const alerts = (await service.store.alerts({ limit: 50, offset: 0 })).sort((x, y) => x.detected_at - y.detected_at);
  const sends: PriorSend[] = [];
  const out: AlertRecord[] = [];
  for (const a of alerts) {
    const t = { asset: a.asset, mint: a.mint, from_state: a.from_state, to_state: a.to_state, discount_bps: a.discount_bps, ts: a.detected_at, calibration };
    if (decideDispatch(t, { threshold_bps: thresholdBps, is_active: true, asset: mint }, sends).send) {
      sends.push({ asset: a.asset, to_state: a.to_state, ts: a.detected_at });
      out.push(a);
    }
  }
  return out;
}
