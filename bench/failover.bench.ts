/**
 * Failover benchmark (npm run bench:failover): runs the scale-out test (test/scale/cluster.test.ts: a three-node
 * nats-server cluster, PostgreSQL, two engines and two API processes replaying `transition-burst` as a live feed)
 * `BENCH_RUNS` times (default 3), collects the `SCALE-OUT` line each run prints, and rewrites the "failover" section of
 * docs/benchmarks.md: kill -9 of the engine holding half the assets -> its leases taken and its actors restored (and
 * fed the samples received meanwhile), and the loss of the nats-server leading PEG_TRANSITIONS -> the next transition
 * on every WebSocket. A run whose test failed is reported as failed, never averaged in.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { loadAverage, machineDescription, today, writeSection } from "./report.ts";

const RUNS = Number(process.env["BENCH_RUNS"] ?? "3");
const ROOT = fileURLToPath(new URL("..", import.meta.url));

interface Measured {
  readonly engine_kill_to_leases_ms: number;
  readonly engine_kill_to_restored_ms: number;
  readonly moved_assets: number;
  readonly moved_scenario_assets: number;
  readonly gap_samples_caught_up: number;
  readonly nats_node_killed: string;
  readonly nats_kill_to_next_ws_transition_ms: number;
  readonly transitions: number;
}

const loadBefore = loadAverage();
const runs: ({ ok: true; m: Measured } | { ok: false; why: string })[] = [];
for (let i = 1; i <= RUNS; i++) {
  const r = spawnSync("npx", ["vitest", "run", "test/scale/cluster.test.ts"], { cwd: ROOT, env: { ...process.env, PEG_SLOW: "1" }, encoding: "utf8", maxBuffer: 64 * 2 ** 20 });
  const line = r.stdout.split("\n").find((l) => l.startsWith("SCALE-OUT "));
  if (r.status === 0 && line !== undefined) runs.push({ ok: true, m: JSON.parse(line.slice("SCALE-OUT ".length)) as Measured });
  else runs.push({ ok: false, why: `exit ${r.status}${line === undefined ? ", no SCALE-OUT line" : ""}` });
  console.log(`run ${i}: ${line ?? runs[runs.length - 1]!.ok}`);
}

const fmt = (x: number) => Math.round(x).toLocaleString("en-US");
const rows = runs.map((r, i) =>
  r.ok
    ? `| ${i + 1} | ${fmt(r.m.engine_kill_to_leases_ms)} ms | **${fmt(r.m.engine_kill_to_restored_ms)} ms** | ${r.m.moved_assets} (${r.m.moved_scenario_assets} in the scenario) | ${fmt(r.m.gap_samples_caught_up)} | ${r.m.nats_node_killed} | ${fmt(r.m.nats_kill_to_next_ws_transition_ms)} ms | ${r.m.transitions}, equal to the offline replay |`
    : `| ${i + 1} | failed (${r.why}) | | | | | | |`,
);
const ok = runs.flatMap((r) => (r.ok ? [r.m] : []));
const restored = ok.map((m) => m.engine_kill_to_restored_ms);
const verdict =
  ok.length === 0
    ? "No run passed."
    : `Engine kill -> every moved asset evaluating again: ${fmt(Math.min(...restored))}-${fmt(Math.max(...restored))} ms over ${ok.length} passing run(s) of ${runs.length}; target < 3,000 ms: **${Math.max(...restored) < 3_000 ? "met" : "missed"}**.`;

writeSection(
  "failover",
  `<!-- failover:start -->
## Failover: kill -9 of an engine, loss of a nats-server

Command: \`npm run bench:failover\` (\`BENCH_RUNS\` to change; here ${RUNS} runs of \`PEG_SLOW=1 npx vitest run test/scale/cluster.test.ts\`).
Machine: ${machineDescription()}. Measured ${today()} (load average ${loadBefore} at the start, ${loadAverage()} at the end).

Load: a three-node nats-server 2.9 cluster on loopback (replicas 3), PostgreSQL 15, two engine processes and two API
processes, \`FEED=scenario:transition-burst\` at \`SCENARIO_SPEED=30\` with \`SCENARIO_CATCHUP=received\` (a live-style
feed: an engine that takes an asset over can only use the samples it received itself), 69 active assets, 4 WebSocket
clients. Each run kills the engine holding half of the assets, then the nats-server leading \`PEG_TRANSITIONS\`, and
passes only if the acknowledged history equals the offline replay (same alert ids and receipt hashes, none twice),
every WebSocket client received every transition once in order, and no take-over lacked a sample it needed.
"Restored" is the last \`acquired asset\` log line of the moved assets (restored and fed the gap samples); "gap
samples" is how many samples the survivor fed them from what it received.

| run | kill -> leases taken | kill -> restored and caught up | assets moved | gap samples | nats-server killed | node kill -> next transition on every WebSocket | transitions |
|---:|---:|---:|---|---:|---|---:|---|
${rows.join("\n")}

${verdict} Previous (2026-11-21, 6 s lease TTL, renewals every 1.5 s, a live feed's gap samples skipped): kill ->
restored 5.5-7.4 s. The time is now the lease TTL (2.5 s after the killed engine's last renewal, sent 0-0.5 s before
the kill), the 20 ms planning slack, and the restore of the moved assets (one recovery read each, tens of
milliseconds in all on an idle machine).
<!-- failover:end -->`,
);
