/**
 * Follows the live stream (`/v1/ws`) with `PegStream` (`@peg-oracle/client`): every transition exactly once, in
 * order, through reconnects and service restarts (it resumes with `since_seq`), plus each asset's state.
 *
 *   npm start                                                     # in another terminal
 *   node --import tsx examples/client-stream.ts [BASE_URL] [--assets USDC,USDT] [--since-seq N] [--states]
 *
 * BASE_URL defaults to http://localhost:8080; `--assets` to every asset; `--since-seq N` first replays the
 * transitions after sequence N (up to 24 h back), as a consumer that persisted its last sequence would; `--states`
 * also prints snapshots and live state updates. Transitions go to stdout, one line each
 * (`transition seq=… ts asset from->to discount=… receipt=…`); connection changes to stderr. Restart the service
 * (even with kill -9) while it runs: the stream reconnects and nothing is missed or repeated. Ctrl-C (SIGINT) or
 * SIGTERM closes the stream and prints the sequence to resume from. Exit 0; 2 on bad arguments.
 */
import { fileURLToPath } from "node:url";
import { PegStream, parseDecimal } from "@peg-oracle/client";

interface Args {
  readonly baseUrl: string;
  readonly assets: string[];
  readonly sinceSeq: number | null;
  readonly states: boolean;
}

const USAGE = "usage: node --import tsx examples/client-stream.ts [BASE_URL] [--assets A,B] [--since-seq N] [--states]";

function parseArgs(argv: readonly string[]): Args | null {
  let baseUrl = "http://localhost:8080";
  let assets = ["*"];
  let sinceSeq: number | null = null;
  let states = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--assets") assets = (argv[++i] ?? "").split(",").filter((s) => s !== "");
    else if (a === "--since-seq") sinceSeq = Number(argv[++i]);
    else if (a === "--states") states = true;
    else if (!a.startsWith("--") && i === 0) baseUrl = a;
    else return null;
  }
  if (assets.length === 0 || (sinceSeq !== null && !(Number.isSafeInteger(sinceSeq) && sinceSeq >= 0))) return null;
  return { baseUrl, assets, sinceSeq, states };
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (args === null) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  // No WebSocket to pass: the global one where there is one (browsers, Node >= 22), else the `ws` package (Node 20).
  const stream = new PegStream({ url: args.baseUrl, assets: args.assets, sinceSeq: args.sinceSeq });
  stream.on("status", (s) => {
    if (s.delayMs > 0) process.stderr.write(`stream ${s.status}: retry ${s.attempt} in ${s.delayMs} ms\n`);
    else if (s.status !== "reconnecting") process.stderr.write(`stream ${s.status}\n`);
  });
  stream.on("error", (e) => process.stderr.write(`stream error ${e.code}: ${e.message}\n`));
  stream.on("slow", (s) => process.stderr.write(`consumer too slow (${s.buffered} queued): paused, resuming from seq ${s.lastSeq ?? "-"}\n`));
  const stop = () => stream.close();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);

  for await (const ev of stream) {
    if (ev.type === "transition") {
      const bps = parseDecimal(ev.discount).times(10_000).toDecimalPlaces(1).toFixed();
      process.stdout.write(`transition seq=${ev.seq} ${ev.ts} ${ev.asset} ${ev.from_state}->${ev.to_state} discount=${ev.discount} (${bps} bps) receipt=${ev.receipt_url}\n`);
    } else if (args.states) {
      process.stdout.write(`${ev.type} ${ev.updated_at ?? "-"} ${ev.asset} ${ev.state} discount=${ev.discount ?? "-"} risk=${ev.risk_score ?? "-"}\n`);
    }
  }
  const error = await stream.closed();
  process.stderr.write(`closed; resume with --since-seq ${stream.lastSeq ?? 0}\n`);
  if (error !== null) {
    process.stderr.write(`${error.code}: ${error.message}\n`);
    return 1;
  }
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
