/**
 * Resolution pinning end to end: a real HTTPS receiver on loopback with a certificate for a name that exists in no
 * DNS (`.example` is reserved), reached through `checkDestination` + `pinnedRequestOptions`. If anything resolved the
 * name again, the request would fail with ENOTFOUND; TLS must still check the certificate against the name.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:https";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkDestination, pinnedLookup, pinnedRequestOptions, type DestinationAccepted, type Resolve } from "../../src/delivery/index.ts";

const NAME = "hooks.pinning-test.example";
let dir: string;
let cert: string;
let server: Server;
let port: number;
const seen: { host: string | undefined; servername: string | false | null | undefined; path: string | undefined; body: string }[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pinning-"));
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
    "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-subj", `/CN=${NAME}`, "-addext", `subjectAltName=DNS:${NAME}`,
  ], { stdio: "ignore" });
  cert = readFileSync(join(dir, "cert.pem"), "utf8");
  server = createServer({ key: readFileSync(join(dir, "key.pem")), cert }, (req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      seen.push({ host: req.headers.host, servername: (req.socket as TLSSocket).servername, path: req.url, body });
      if (req.url === "/redirect") {
        res.writeHead(302, { location: "https://169.254.169.254/latest/meta-data/" }).end();
      } else {
        res.writeHead(200, { "content-type": "text/plain" }).end("ok");
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

const toLoopback: Resolve = async () => ["127.0.0.1"];

async function checked(url: string): Promise<DestinationAccepted> {
  const res = await checkDestination(url, { resolve: toLoopback, allowLoopbackForTests: true, allowedPorts: [port] });
  if (!res.ok) throw new Error(res.message);
  return res;
}

function send(opts: ReturnType<typeof pinnedRequestOptions>, body: string): Promise<{ status: number; location: string | undefined; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(opts, (res: IncomingMessage) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("pinnedRequestOptions", () => {
  it("connects to the pinned address while SNI, certificate check and Host use the name", async () => {
    seen.length = 0;
    const dest = await checked(`https://${NAME}:${port}/hook?x=1`);
    const opts = pinnedRequestOptions(dest, { headers: { "content-type": "application/json", Host: "evil.example.net" }, ca: cert });
    expect(opts).toMatchObject({ host: "127.0.0.1", port, path: "/hook?x=1", method: "POST", servername: NAME, agent: false });
    const res = await send(opts, '{"a":1}');
    expect(res).toMatchObject({ status: 200, text: "ok" });
    expect(seen).toEqual([{ host: `${NAME}:${port}`, servername: NAME, path: "/hook?x=1", body: '{"a":1}' }]);
  });

  it("does not follow a redirect: the 3xx is the answer", async () => {
    seen.length = 0;
    const res = await send(pinnedRequestOptions(await checked(`https://${NAME}:${port}/redirect`), { ca: cert }), "{}");
    expect(res.status).toBe(302);
    expect(res.location).toBe("https://169.254.169.254/latest/meta-data/");
    expect(seen.length).toBe(1);
  });

  it("still verifies the certificate against the name, not the pinned address", async () => {
    const dest = await checked(`https://other.pinning-test.example:${port}/hook`);
    await expect(send(pinnedRequestOptions(dest, { ca: cert }), "{}")).rejects.toMatchObject({ code: "ERR_TLS_CERT_ALTNAME_INVALID" });
  });

  it("honours an abort signal", async () => {
    const dest = await checked(`https://${NAME}:${port}/hook`);
    const ctl = new AbortController();
    ctl.abort();
    await expect(send(pinnedRequestOptions(dest, { ca: cert, signal: ctl.signal }), "{}")).rejects.toMatchObject({ name: "AbortError" });
  });

  it("pinnedLookup answers with the pinned address in both callback shapes", () => {
    const lookup = pinnedLookup("93.184.215.14", 4);
    const one: unknown[] = [];
    const all: unknown[] = [];
    lookup("anything.example.com", {}, (...args: unknown[]) => one.push(...args));
    lookup("anything.example.com", { all: true }, (...args: unknown[]) => all.push(...args));
    expect(one).toEqual([null, "93.184.215.14", 4]);
    expect(all).toEqual([null, [{ address: "93.184.215.14", family: 4 }]]);
  });
});
