/**
 * A client process of the WebSocket benchmark (bench/ws.bench.ts): holds a share of the subscribed clients, each a
 * WebSocket bound to its own loopback source address (at most 20 per address: the server's per-address limit), and
 * notes the monotonic time every tracked transition reaches every client. Driven over IPC (ws-common.ts):
 *
 * - `connect`: opens `count` clients (64 handshakes in flight); each waits for `hello`, subscribes to `*` and waits
 *   for its snapshots (one per active asset), as a dashboard does;
 * - `track`: the alert ids of the transitions to time (the benchmark generates them before publishing);
 * - `count`: tracked deliveries so far (and this process's CPU time), to know when a burst is fully delivered;
 * - `collect`: the receive times, one slot per (client, tracked transition).
 *
 * Two client implementations (`impl` of `connect`), same behaviour on the wire:
 * - `raw` (default): a minimal RFC 6455 client on a plain TCP socket (handshake, unmasked server frames, masked client
 *   frames, pong, close). Every frame of one socket read gets that read's time.
 * - `ws`: the `ws` library's client, each message timed when `ws` emits it.
 * On a shared machine the clients' own CPU time adds to the measured latency, so the handler stays cheap either way:
 * no JSON.parse of transitions (the type is read from fixed bytes, the alert id sliced out).
 */
import { randomBytes } from "node:crypto";
import { connect as tcpConnect, type Socket } from "node:net";
import WebSocket from "ws";
import { clientAddress, monoMs, type ClientCommand, type ClientImpl, type ClientReply } from "./ws-common.ts";

const CONCURRENT_HANDSHAKES = 64;
const CONNECT_TIMEOUT_MS = 60_000;
const SUBSCRIBE = '{"op":"subscribe","assets":["*"]}';
const ALERT_KEY = '"alert_id":"';
const UUID_LEN = 36;
const T = 0x74; // 't'
const R = 0x72; // 'r'
const S = 0x73; // 's'
const N = 0x6e; // 'n'
const H = 0x68; // 'h'

const conns: { close(): void }[] = [];
let tracked = new Map<string, number>();
let nTracked = 0;
let receivedAt = new Float64Array(0);
let received = 0;
let duplicates = 0;
let closed = 0;
const closeCodes: Record<string, number> = {};

const reply = (m: ClientReply) => process.send?.(m);

/** The per-client state both implementations share. */
interface Client {
  readonly local: number;
  readonly snapshots: number;
  seen: number;
  ready: boolean;
  subscribe(): void;
  onReady(): void;
}

/** One server text message (bytes start..end of buf) received at `at`. */
function onText(c: Client, buf: Buffer, start: number, end: number, at: number): void {
  // {"type":"<type>" : the type starts at byte 9.
  const c9 = buf[start + 9];
  const c10 = buf[start + 10];
  if (c9 === T && c10 === R) {
    const k = buf.indexOf(ALERT_KEY, start + 20, "latin1");
    if (k < 0 || k >= end) return;
    const from = k + ALERT_KEY.length;
    const i = tracked.get(buf.toString("latin1", from, from + UUID_LEN));
    if (i === undefined) return; // not tracked
    const slot = c.local * nTracked + i;
    if (receivedAt[slot] === receivedAt[slot]) duplicates++; // not NaN: seen before
    else {
      receivedAt[slot] = at;
      received++;
    }
  } else if (c9 === S && c10 === N) {
    if (++c.seen === c.snapshots && !c.ready) {
      c.ready = true;
      c.onReady();
    }
  } else if (c9 === H) {
    c.subscribe();
  }
}

function noteClose(code: number): void {
  closed++;
  closeCodes[code] = (closeCodes[code] ?? 0) + 1;
}

/** A masked client frame (FIN set). Payloads here are short (< 126 bytes). */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  if (payload.length > 125) throw new Error("client frames stay under 126 bytes");
  const mask = randomBytes(4);
  const out = Buffer.allocUnsafe(6 + payload.length);
  out[0] = 0x80 | opcode;
  out[1] = 0x80 | payload.length;
  mask.copy(out, 2);
  for (let i = 0; i < payload.length; i++) out[6 + i] = payload[i]! ^ mask[i & 3]!;
  return out;
}

/** `raw`: RFC 6455 over a plain socket. */
function openRaw(port: number, c: Client, fail: (why: string) => void): { close(): void } {
  const sock: Socket = tcpConnect({ host: "127.0.0.1", port, localAddress: clientAddress(c.local + base), noDelay: true });
  const key = randomBytes(16).toString("base64");
  let upgraded = false;
  let open = true;
  let pending: Buffer | null = null;
  c.subscribe = () => sock.write(clientFrame(0x1, Buffer.from(SUBSCRIBE)));
  sock.once("connect", () =>
    sock.write(`GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`),
  );
  sock.on("error", (e) => fail(e.message));
  sock.once("close", () => {
    if (open) noteClose(1006);
    open = false;
    fail("connection closed before subscribing");
  });
  sock.on("data", (chunk: Buffer) => {
    const at = monoMs();
    const buf = pending === null ? chunk : Buffer.concat([pending, chunk]);
    pending = null;
    let off = 0;
    if (!upgraded) {
      const eoh = buf.indexOf("\r\n\r\n");
      if (eoh < 0) {
        pending = buf;
        return;
      }
      const status = buf.toString("latin1", 0, buf.indexOf("\r\n"));
      if (!/^HTTP\/1\.1 101 /.test(status)) return fail(`handshake refused: ${status}`);
      upgraded = true;
      off = eoh + 4;
    }
    while (buf.length - off >= 2) {
      const b0 = buf[off]!;
      let len = buf[off + 1]! & 0x7f;
      let head = 2;
      if (len === 126) {
        if (buf.length - off < 4) break;
        len = buf.readUInt16BE(off + 2);
        head = 4;
      } else if (len === 127) {
        if (buf.length - off < 10) break;
        len = Number(buf.readBigUInt64BE(off + 2));
        head = 10;
      }
      if (buf.length - off < head + len) break;
      const start = off + head;
      const end = start + len;
      const opcode = b0 & 0x0f;
      if ((b0 & 0x80) === 0) return fail("fragmented frame (not expected from this server)");
      if (opcode === 0x1) onText(c, buf, start, end, at);
      else if (opcode === 0x9) sock.write(clientFrame(0xa, buf.subarray(start, end)));
      else if (opcode === 0x8) {
        if (open) noteClose(len >= 2 ? buf.readUInt16BE(start) : 1005);
        open = false;
        sock.destroy();
        return fail("closed by the server before subscribing");
      }
      off = end;
    }
    if (off < buf.length) pending = buf.subarray(off);
  });
  return {
    close: () => {
      open = false;
      sock.destroy();
    },
  };
}

/** `ws`: the `ws` library's client. */
function openWs(port: number, c: Client, fail: (why: string) => void): { close(): void } {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`, {
    localAddress: clientAddress(c.local + base),
    perMessageDeflate: false,
    skipUTF8Validation: true,
    handshakeTimeout: CONNECT_TIMEOUT_MS,
  });
  c.subscribe = () => ws.send(SUBSCRIBE);
  ws.on("error", (e) => fail(e.message));
  ws.once("close", (code) => {
    noteClose(code);
    fail(`closed ${code} before subscribing`);
  });
  ws.on("message", (data: Buffer) => onText(c, data, 0, data.length, monoMs()));
  return { close: () => ws.terminate() };
}

/** Global index of this process's first client (decides the source addresses). */
let base = 0;

/** One client: resolves when subscribed and all snapshots are in, rejects on any failure before that. */
function open(impl: ClientImpl, port: number, local: number, snapshots: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const client: Client = {
      local,
      snapshots,
      seen: 0,
      ready: false,
      subscribe: () => {},
      onReady: () => {
        settled = true;
        clearTimeout(timer);
        resolve();
      },
    };
    const fail = (why: string) => {
      if (settled || client.ready) return;
      settled = true;
      clearTimeout(timer);
      conns[local]?.close();
      reject(new Error(why));
    };
    const timer = setTimeout(() => fail("not subscribed within 60 s"), CONNECT_TIMEOUT_MS);
    conns[local] = (impl === "raw" ? openRaw : openWs)(port, client, fail);
  });
}

async function connectAll(impl: ClientImpl, port: number, count: number, snapshots: number): Promise<void> {
  const t0 = monoMs();
  let next = 0;
  let connected = 0;
  let failed = 0;
  const errors: string[] = [];
  const worker = async () => {
    while (next < count) {
      const local = next++;
      try {
        await open(impl, port, local, snapshots);
        connected++;
      } catch (e) {
        failed++;
        if (errors.length < 5) errors.push(e instanceof Error ? e.message : String(e));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENT_HANDSHAKES, count) }, worker));
  reply({ op: "connected", connected, failed, errors, ms: monoMs() - t0 });
}

process.on("disconnect", () => process.exit(0)); // the benchmark died: do not linger
process.on("message", (m: ClientCommand) => {
  switch (m.op) {
    case "connect":
      base = m.firstIndex;
      void connectAll(m.impl, m.port, m.count, m.snapshots);
      break;
    case "track":
      tracked = new Map(m.ids.map((id, i) => [id, i]));
      nTracked = m.ids.length;
      receivedAt = new Float64Array(conns.length * nTracked).fill(NaN);
      received = 0;
      duplicates = 0;
      reply({ op: "tracked" });
      break;
    case "count": {
      const cpu = process.cpuUsage();
      reply({ op: "count", received, closed, cpuUs: cpu.user + cpu.system, cpuSysUs: cpu.system });
      break;
    }
    case "collect":
      reply({ op: "collect", receivedAt, duplicates, closed, closeCodes });
      break;
    case "stop":
      for (const c of conns) c?.close();
      process.exit(0);
  }
});
