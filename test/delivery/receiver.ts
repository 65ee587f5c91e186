/**
 * A webhook receiver for the delivery tests: a real HTTPS server on loopback whose certificate (for `NAME`) is issued
 * by a CA generated here, so the client trusts it only through the `ca` option, as production code would trust a
 * configured CA. `/hook` behaves as interface 6.3.4 tells receivers to: verify the signature with node:crypto against
 * the listed keys, check the timestamp window, and de-duplicate on the event id. Other paths misbehave on purpose.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { verifyDelivery, type ListedKey } from "../../src/delivery/index.ts";

export const NAME = "hooks.delivery-test.example";
/** Another name that resolves (in the tests) to the same receiver, but is not on its certificate. */
export const OTHER_NAME = "other.delivery-test.example";
/** Chat hosts the certificate also names, so a test can point a chat host's name (through its resolver) here. */
export const CHAT_NAMES = ["hooks.slack.com", "discord.com"] as const;

export interface Received {
  readonly path: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
  readonly verified: boolean;
  readonly reason: string | null;
  readonly eventId: string | null;
  readonly duplicate: boolean;
  readonly at: number;
}

export interface Receiver {
  readonly port: number;
  /** PEM of the CA that issued the receiver's certificate. */
  readonly ca: string;
  readonly received: Received[];
  /** Event ids acted on (each once). */
  readonly acted: string[];
  /** Keys the receiver verifies against (set by the test, as if fetched from `/v1/meta/webhook-keys`). */
  keys: ListedKey[];
  /** `/flaky/<n>[/<mode>]` fails the first n deliveries of each event id (see `failFlaky`); this counts them. */
  readonly flakyCounts: Map<string, number>;
  close(): Promise<void>;
}

function openssl(args: string[]): void {
  execFileSync("openssl", args, { stdio: "ignore" });
}

function makeCertificates(dir: string): { ca: string; key: Buffer; cert: string } {
  const p = (f: string): string => join(dir, f);
  openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
    "-keyout", p("ca.key"), "-out", p("ca.pem"), "-subj", "/CN=delivery-test CA",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
  openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", p("leaf.key"), "-out", p("leaf.csr"), "-subj", `/CN=${NAME}`]);
  openssl(["x509", "-req", "-in", p("leaf.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"), "-CAcreateserial", "-days", "1",
    "-out", p("leaf.pem"), "-extfile", p("ext.cnf")]);
  return { ca: readFileSync(p("ca.pem"), "utf8"), key: readFileSync(p("leaf.key")), cert: readFileSync(p("leaf.pem"), "utf8") };
}

/**
 * How `/flaky/<n>/<mode>` fails its first n deliveries of each event: `500` (also `/flaky/<n>`), `503`, `429` (with
 * `Retry-After: 120`), `302` (to a public URL; never followed) or `slow` (never answered: the client's budget runs
 * out; the response is kept in `held` and destroyed on close).
 */
const FLAKY_MODES = ["500", "503", "429", "302", "slow"] as const;

function failFlaky(res: ServerResponse, mode: string, text: string, held: ServerResponse[]): void {
  switch (mode) {
    case "500":
    case "503":
      res.writeHead(Number(mode), { "content-type": "text/plain" }).end(text);
      return;
    case "429":
      res.writeHead(429, { "retry-after": "120", "content-type": "text/plain" }).end(text);
      return;
    case "302":
      res.writeHead(302, { location: "https://example.com/hook" }).end();
      return;
    case "slow":
      held.push(res);
      return;
    default:
      throw new Error(`unknown flaky mode ${mode} (one of ${FLAKY_MODES.join(", ")})`);
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => resolve(body));
  });
}

export async function startReceiver(): Promise<Receiver> {
  const dir = mkdtempSync(join(tmpdir(), "delivery-receiver-"));
  writeFileSync(join(dir, "ext.cnf"), `subjectAltName=${[NAME, ...CHAT_NAMES].map((n) => `DNS:${n}`).join(",")}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  const { ca, key, cert } = makeCertificates(dir);
  const received: Received[] = [];
  const acted: string[] = [];
  const seen = new Set<string>();
  const flakyCounts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const held: ServerResponse[] = [];
  const rawSockets = new Map<number, Socket>();

  const state = { keys: [] as ListedKey[] };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req);
    const path = req.url ?? "/";
    const v = verifyDelivery(req.headers, body, state.keys, Date.now());
    const eventId = v.ok ? v.eventId : null;
    const record = (duplicate: boolean): void => {
      received.push({ path, headers: req.headers, body, verified: v.ok, reason: v.ok ? null : v.reason, eventId, duplicate, at: Date.now() });
    };
    if (path === "/hook" || path.startsWith("/flaky/")) {
      if (!v.ok) {
        record(false);
        res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: v.reason }));
        return;
      }
      if (path.startsWith("/flaky/")) {
        const [times, mode = "500"] = path.slice("/flaky/".length).split("/");
        const n = Number(times);
        const count = (flakyCounts.get(v.eventId) ?? 0) + 1;
        flakyCounts.set(v.eventId, count);
        if (count <= n) {
          record(false);
          failFlaky(res, mode, `failure ${count} of ${n}`, held);
          return;
        }
      }
      const duplicate = seen.has(v.eventId);
      record(duplicate);
      if (!duplicate) {
        seen.add(v.eventId);
        acted.push(v.eventId);
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true, duplicate }));
      return;
    }
    record(false);
    // A chat host's incoming-webhook paths (Slack `/services/...`, Discord `/api/webhooks/...`) accept the message.
    if (path.startsWith("/services/") || path.startsWith("/api/webhooks/")) {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      return;
    }
    switch (path) {
      case "/slow":
        held.push(res); // never answered: the client's budget must run out
        return;
      case "/500":
        res.writeHead(500, { "content-type": "text/plain" }).end("internal error at the receiver");
        return;
      case "/429":
        res.writeHead(429, { "retry-after": "120" }).end("slow down");
        return;
      case "/429-date":
        res.writeHead(429, { "retry-after": new Date(Date.now() + 90_000).toUTCString() }).end();
        return;
      case "/429-once": {
        const n = (flakyCounts.get(path) ?? 0) + 1;
        flakyCounts.set(path, n);
        if (n === 1) res.writeHead(429, { "retry-after": "60" }).end();
        else res.writeHead(204).end();
        return;
      }
      case "/302-public":
        res.writeHead(302, { location: "https://example.com/hook" }).end();
        return;
      case "/302-private":
        res.writeHead(302, { location: "https://169.254.169.254/latest/meta-data/" }).end();
        return;
      case "/reset": {
        // A TCP RST on the underlying socket (the TLS socket itself cannot send one).
        const raw = rawSockets.get(req.socket.remotePort ?? -1);
        if (raw !== undefined) raw.resetAndDestroy();
        else req.socket.destroy();
        return;
      }
      case "/close":
        req.socket.destroy(); // closed without an answer (no RST)
        return;
      case "/big":
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("é".repeat(100_000)); // 200,000 bytes, two per character
        return;
      case "/accepted":
        res.writeHead(202).end("queued");
        return;
      default:
        res.writeHead(404).end("no such path");
    }
  };

  const server: Server = createServer({ key, cert }, (req, res) => void handle(req, res));
  server.on("connection", (raw: Socket) => {
    const port = raw.remotePort ?? -1;
    rawSockets.set(port, raw);
    raw.on("close", () => rawSockets.delete(port));
  });
  server.on("secureConnection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  // A TLS handshake the client abandons (wrong name, unknown CA) is not an error for the test.
  server.on("tlsClientError", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;

  return {
    port,
    ca,
    received,
    acted,
    flakyCounts,
    get keys() {
      return state.keys;
    },
    set keys(k: ListedKey[]) {
      state.keys = k;
    },
    async close() {
      for (const r of held) r.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
