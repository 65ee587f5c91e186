/**
 * peg-oracle NATS subscriber example (docs/nats.md).
 *
 *   node --import tsx examples/subscriber.ts [--since-seq N | --since-time RFC3339] [--mint MINT]
 *
 * Prints every transition of stream PEG_TRANSITIONS (an ordered consumer: only new transitions, or from stream
 * sequence N / from an instant) and every `peg.state.*` push (a core subscription: live only), one compact line
 * each, on stdout. Diagnostics go to stderr. Ctrl-C (SIGINT) or SIGTERM closes the consumer, drains the connection
 * and exits 0. Server: NATS_URL (a comma-separated list is accepted); unset, the service's embedded server, whose URL
 * the service writes to DATA_DIR/nats.url (DATA_DIR as the service reads it: default ./data, relative to the working
 * directory); without that file, nats://127.0.0.1:4222, saying so.
 *
 * Uses only @nats-io/transport-node and @nats-io/jetstream 3.x. Subject filters are single `filter_subject` strings:
 * nats-server 2.9 rejects the array form `filter_subjects`.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type ConsumerMessages, type JsMsg } from "@nats-io/jetstream";

const STREAM = "PEG_TRANSITIONS";

/** The members of a transition receipt this example prints (the whole Receipt is in docs/nats.md). */
interface ReceiptLike {
  readonly alert_id: string;
  readonly asset: string;
  readonly mint: string;
  readonly from_state: string;
  readonly to_state: string;
  readonly detected_at: string;
  readonly discount: string;
  readonly discount_bps: number;
  readonly receipt_sha256: string;
  readonly computed?: { readonly gate?: string | null };
  readonly inputs_frozen?: { readonly trigger?: string };
}

/** The members of a `peg.state.<mint>` payload (SampleMessage, v 1) this example prints. */
interface StateLike {
  readonly v: number;
  readonly asset: string;
  readonly mint: string;
  readonly ts: string;
  readonly trigger: string;
  readonly state: string;
  readonly band: string;
  readonly gate: string | null;
  readonly discount: string;
  readonly market_usd: string;
  readonly intrinsic_usd: string;
}

interface Args {
  readonly sinceSeq: number | null;
  readonly sinceTime: string | null;
  readonly mint: string | null;
}

const USAGE = "usage: node --import tsx examples/subscriber.ts [--since-seq N | --since-time RFC3339] [--mint MINT]";

function fail(message: string, code = 2): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

function parseArgs(argv: readonly string[]): Args {
  let sinceSeq: number | null = null;
  let sinceTime: string | null = null;
  let mint: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    const value = (): string => {
      if (eq > 0 && arg.startsWith("--")) return arg.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined) fail(`${name} needs a value\n${USAGE}`);
      return v;
    };
    switch (name) {
      case "--since-seq": {
        const v = value();
        if (!/^[1-9][0-9]*$/.test(v) || !Number.isSafeInteger(Number(v))) fail(`--since-seq must be a stream sequence >= 1, got "${v}"`);
        sinceSeq = Number(v);
        break;
      }
      case "--since-time": {
        const v = value();
        const t = Date.parse(v);
        if (Number.isNaN(t)) fail(`--since-time must be an RFC 3339 timestamp, got "${v}"`);
        sinceTime = new Date(t).toISOString();
        break;
      }
      case "--mint": {
        const v = value();
        // A mint is base58: always one valid subject token. Refuse anything that would widen or break the filter.
        if (!/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(v)) fail(`--mint must be a base58 mint address (not a symbol), got "${v}"`);
        mint = v;
        break;
      }
      case "-h":
      case "--help":
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
        break;
      default:
        fail(`unknown argument "${arg}"\n${USAGE}`);
    }
  }
  if (sinceSeq !== null && sinceTime !== null) fail(`--since-seq and --since-time are exclusive\n${USAGE}`);
  return { sinceSeq, sinceTime, mint };
}

const FALLBACK_URL = "nats://127.0.0.1:4222";

/**
 * The servers to connect to, and where they came from: NATS_URL; else the URL the service's embedded nats-server
 * listens on (a free port chosen at its start, written to DATA_DIR/nats.url while it runs); else 4222, with a note.
 * Empty values count as unset, as for the service.
 */
function natsServers(env: NodeJS.ProcessEnv, cwd: string): { servers: string[]; from: string; note: string | null } {
  const list = (text: string) => text.split(",").map((s) => s.trim()).filter((s) => s !== "");
  const natsUrl = list(env["NATS_URL"] ?? "");
  if (natsUrl.length > 0) return { servers: natsUrl, from: "NATS_URL", note: null };
  const dataDir = resolve(cwd, env["DATA_DIR"]?.trim() || "./data");
  const file = join(dataDir, "nats.url");
  let why: string;
  try {
    const servers = list(readFileSync(file, "utf8"));
    if (servers.length > 0) return { servers, from: `${file} (the service's embedded nats-server)`, note: null };
    why = `${file} is empty`;
  } catch (e) {
    why = (e as NodeJS.ErrnoException).code === "ENOENT" ? `there is no ${file} (no service with its embedded nats-server runs on DATA_DIR=${dataDir})` : `${file} cannot be read (${e instanceof Error ? e.message : String(e)})`;
  }
  return {
    servers: [FALLBACK_URL],
    from: FALLBACK_URL,
    note: `NATS_URL is not set and ${why}: trying ${FALLBACK_URL}. Set NATS_URL, or DATA_DIR to the service's.`,
  };
}

function transitionLine(m: JsMsg): string {
  let r: ReceiptLike;
  try {
    r = m.json<ReceiptLike>();
  } catch {
    return `transition seq=${m.seq} subject=${m.subject} (payload is not JSON)`;
  }
  return [
    `transition seq=${m.seq}`,
    r.detected_at,
    r.asset,
    r.mint,
    `${r.from_state}->${r.to_state}`,
    `discount=${r.discount}`,
    `bps=${r.discount_bps}`,
    `gate=${r.computed?.gate ?? "-"}`,
    `trigger=${r.inputs_frozen?.trigger ?? "-"}`,
    `alert_id=${r.alert_id}`,
    `sha256=${r.receipt_sha256}`,
  ].join(" ");
}

function stateLine(subject: string, text: string): string {
  let s: StateLike;
  try {
    s = JSON.parse(text) as StateLike;
  } catch {
    return `state subject=${subject} (payload is not JSON)`;
  }
  return [
    "state",
    s.ts,
    s.asset,
    s.mint,
    s.state,
    `band=${s.band}`,
    `discount=${s.discount}`,
    `market_usd=${s.market_usd}`,
    `intrinsic_usd=${s.intrinsic_usd}`,
    `gate=${s.gate ?? "-"}`,
    `trigger=${s.trigger}`,
  ].join(" ");
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const { servers, from, note } = natsServers(process.env, process.cwd());
  if (note !== null) process.stderr.write(`${note}\n`);
  const transitionFilter = args.mint === null ? "peg.transition.>" : `peg.transition.${args.mint}`;
  const stateSubject = args.mint === null ? "peg.state.>" : `peg.state.${args.mint}`;

  let nc: NatsConnection;
  try {
    nc = await connect({ servers, name: "peg-oracle-example-subscriber", maxReconnectAttempts: -1 });
  } catch (e) {
    fail(`cannot connect to ${servers.join(",")} (from ${from}): ${e instanceof Error ? e.message : String(e)}`, 1);
  }

  // Where to start. "Only new ones" is pinned to the stream's current last sequence + 1 rather than
  // DeliverPolicy.New, so that a consumer reset (after a reconnect) before the first delivery cannot replay history.
  let startSeq: number;
  const jsm = await jetstreamManager(nc);
  try {
    const info = await jsm.streams.info(STREAM);
    startSeq = args.sinceSeq ?? info.state.last_seq + 1;
  } catch (e) {
    await nc.close();
    fail(`stream ${STREAM} is not available (${e instanceof Error ? e.message : String(e)}): start the service first (npm start), it creates the topology`, 1);
  }

  const js = jetstream(nc);
  const consumer = await js.consumers.get(
    STREAM,
    args.sinceTime !== null
      ? { filter_subjects: transitionFilter, opt_start_time: args.sinceTime }
      : { filter_subjects: transitionFilter, opt_start_seq: startSeq },
  );
  const messages: ConsumerMessages = await consumer.consume();
  const states: Subscription = nc.subscribe(stateSubject, {
    callback: (err, msg) => {
      if (err !== null) process.stderr.write(`state subscription error: ${err.message}\n`);
      else process.stdout.write(`${stateLine(msg.subject, msg.string())}\n`);
    },
  });
  await nc.flush(); // the server has the state subscription before we announce readiness

  let stopping: Promise<void> | null = null;
  const stop = (signal: string) =>
    (stopping ??= (async () => {
      process.stderr.write(`${signal}: closing\n`);
      states.unsubscribe();
      await messages.close();
      await nc.drain();
    })());
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));

  process.stderr.write(
    `subscribed: ${STREAM} filter=${transitionFilter} from ${args.sinceTime !== null ? `time ${args.sinceTime}` : `seq ${startSeq}`}; ${stateSubject}; server ${servers.join(",")} (${from})\n`,
  );
  for await (const m of messages) process.stdout.write(`${transitionLine(m)}\n`);
  // The loop ends when stop() closed the consumer (or the consumer failed): finish the orderly close either way.
  await stop("consumer closed");
  await nc.closed();
}

main().then(
  () => process.exit(0),
  (e: unknown) => fail(`subscriber failed: ${e instanceof Error ? e.message : String(e)}`, 1),
);
