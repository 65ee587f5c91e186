/**
 * The faults section of docs/benchmarks.md, from the records the fault tests of the last `npm run test:faults` left in
 * test-results/faults/ (`FaultRecord`, test/faults/fault-run.ts). `npm run test:faults` runs this only when every
 * fault test passed; it fails if a record is missing.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { FAULT_RESULTS_DIR, type FaultRecord } from "../test/faults/fault-run.ts";
import { loadAverage, machineDescription, today, writeSection } from "./report.ts";

const TESTS = ["kill-burst", "nats-restart", "postgres-restart", "receivers", "disk-full"] as const;
const TITLES: Record<(typeof TESTS)[number], string> = {
  "kill-burst": "kill -9 of the service, three times during the burst",
  "nats-restart": "nats-server killed (SIGKILL), then stopped (SIGTERM), each time restarted",
  "postgres-restart": "PostgreSQL stopped (fast shutdown), then crashed (immediate), each time restarted",
  receivers: "webhook receivers that time out, answer 500, 503, 429 with Retry-After, or redirect",
  "disk-full": "the PGlite directory's tmpfs filled to the last byte, then freed",
};

const records = new Map<string, FaultRecord>();
if (existsSync(FAULT_RESULTS_DIR)) {
  for (const f of readdirSync(FAULT_RESULTS_DIR).filter((n) => n.endsWith(".json"))) {
    const r = JSON.parse(readFileSync(join(FAULT_RESULTS_DIR, f), "utf8")) as FaultRecord;
    records.set(r.test, r);
  }
}
const missing = TESTS.filter((t) => !records.has(t));
if (missing.length > 0) {
  console.error(`no fault record for ${missing.join(", ")} in ${FAULT_RESULTS_DIR} (run npm run test:faults; a test skipped, e.g. disk-full without root, leaves none)`);
  process.exit(1);
}

const mib = (b: number): string => (b / 2 ** 20).toFixed(1);
const fmt = (x: number): string => Math.round(x).toLocaleString("en-US");
const rows = TESTS.map((t) => {
  const r = records.get(t)!;
  const outages = r.outages.length === 0 ? "none (ready throughout)" : r.outages.map((o) => `${o.what}: down ${fmt(o.downMs)} ms, ${o.non200Polls} non-200 polls, 200 again after ${fmt(o.readyAgainMs)} ms`).join("; ");
  const m = r.memory;
  return `| ${TITLES[t]} (\`${t}\`, ${r.store}) | ${r.transitions} (${r.replay}) | ${fmt(r.eventsAccepted)} of ${fmt(r.webhookRequests)} | ${outages} | ${mib(m.baseline.heapUsed)} -> ${mib(m.after.heapUsed)} | ${mib(m.baseline.rss)} -> ${mib(m.after.rss)} |`;
});
const finished = [...records.values()].map((r) => r.finishedAt).sort();

const section = `<!-- faults:start -->
## Fault suite

Command: \`npm run test:faults\` (\`PEG_SLOW=1 vitest run test/faults\`, then \`bench/faults-report.ts\` writes this
section from the records the tests leave in \`test-results/faults/\`; CI runs the same tests in the slow suite,
\`npm run test:slow\`). Machine: ${machineDescription()}; each test starts its own nats-server (and PostgreSQL where named). Measured ${today()}
(tests finished ${finished[0]!.slice(11, 19)} to ${finished.at(-1)!.slice(11, 19)} UTC; load average ${loadAverage()} after the run).

Each test replays the \`transition-burst\` scenario through the real service (a child process) with USDC webhooks on
an HTTPS test receiver, injects its fault in the middle of the burst, lets the scenario and every delivery finish,
then checks (\`test/faults/invariants.ts\`): no alert id repeats; per asset every transition continues the previous one
and every receipt verifies; every transition JetStream acknowledged is stored exactly once; every webhook event was
delivered at least once with its original event id; \`/readyz\` reported each outage and answered 200 again; memory
returned to its baseline. How the acknowledged history compares with the uninterrupted offline replay is reported,
not asserted (README, "Fault suite": on a scaled clock a stall can let a dwell timer fire before earlier samples). Memory is read in the service after two forced GCs: the baseline when the burst is under way, "after"
once everything has caught up (for \`kill-burst\`, the last process against the first). The suite's other tests
(\`crash\`: kill -9 on both stores against the offline replay; \`webhook-kill\`: kill -9 during a retry schedule;
\`signals\` and \`embedded\`: the ordered shutdown) have no numbers to report: they pass or fail.

| fault | transitions acknowledged | webhook events accepted of requests | outages (\`/readyz\` polled every 250 ms) | heap MiB | RSS MiB |
|---|---|---:|---|---:|---:|
${rows.join("\n")}
<!-- faults:end -->`;
writeSection("faults", section);
