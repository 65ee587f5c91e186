/**
 * The SSRF guard at registration, through the API: POST /v1/me/webhooks (and PATCH of an existing webhook's URL)
 * refuses every hostile destination of the corpus with 400 `invalid_body`, stores nothing, and accepts a public one.
 * (The same guard runs again at delivery time: test/delivery/attempt.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountsHarness, type AccountsHarness } from "./helpers.ts";

/** 48 hostile destinations: private, loopback, link-local and metadata addresses in every notation, names, tricks. */
const HOSTILE = [
  "http://hooks.example.com/x", // plain http
  "ftp://hooks.example.com/x",
  "https://127.0.0.1/x",
  "https://127.1/x",
  "https://2130706433/x", // decimal 127.0.0.1
  "https://0x7f000001/x", // hex
  "https://0177.0.0.1/x", // octal
  "https://0x7f.0.0.1/x",
  "https://0/x",
  "https://0.0.0.0/x",
  "https://10.0.0.1/x",
  "https://10.255.255.255/x",
  "https://172.16.0.1/x",
  "https://172.31.255.254/x",
  "https://192.168.1.1/x",
  "https://169.254.169.254/latest/meta-data/", // cloud metadata
  "https://169.254.0.1/x",
  "https://100.64.0.1/x", // CGNAT
  "https://192.0.0.1/x",
  "https://198.18.0.1/x",
  "https://224.0.0.1/x", // multicast
  "https://255.255.255.255/x",
  "https://240.0.0.1/x",
  "https://[::1]/x",
  "https://[::]/x",
  "https://[fe80::1]/x",
  "https://[fc00::1]/x",
  "https://[fd12:3456::1]/x",
  "https://[ff02::1]/x",
  "https://[::ffff:127.0.0.1]/x", // IPv4-mapped
  "https://[::ffff:7f00:1]/x",
  "https://[::ffff:169.254.169.254]/x",
  "https://[64:ff9b::a00:1]/x", // NAT64 of 10.0.0.1
  "https://[2002:c0a8:101::1]/x", // 6to4 of 192.168.1.1
  "https://localhost/x",
  "https://LOCALHOST/x",
  "https://localhost./x",
  "https://api.localhost/x",
  "https://printer.local/x",
  "https://db.internal/x",
  "https://metadata.google.internal/computeMetadata/v1/",
  "https://intranet/x", // single label
  "https://user:pass@hooks.example.com/x", // userinfo
  "https://hooks.example.com@127.0.0.1/x",
  "https://rebind.example.com/x", // resolves to 10.0.0.7
  "https://mixed.example.com/x", // one public, one metadata address
  "https://nonexistent.example.org/x", // does not resolve
  "not a url",
];

let ah: AccountsHarness;
let token: string;

beforeAll(async () => {
  ah = await accountsHarness();
  token = (await ah.login(7001, "Mallory")).token;
}, 60_000);

afterAll(async () => {
  await ah?.close();
});

describe("SSRF guard at webhook registration", () => {
  it(`refuses all ${HOSTILE.length} hostile destinations with 400 invalid_body and stores none of them`, async () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(40);
    for (const url of HOSTILE) {
      const a = await ah.send("POST", "/v1/me/webhooks", token, { url, asset: "USDC", threshold_bps: 50 });
      expect(a.status, `${url}: ${JSON.stringify(a.body)}`).toBe(400);
      expect((a.body as { error: string }).error, url).toBe("invalid_body");
    }
    const list = await ah.send("GET", "/v1/me/webhooks", token);
    expect((list.body as { data: unknown[] }).data).toEqual([]);
  });

  it("accepts a public destination, and refuses to move it to a hostile one with PATCH", async () => {
    const ok = await ah.send("POST", "/v1/me/webhooks", token, { url: "https://hooks.example.com/peg", asset: "USDC", threshold_bps: 50 });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    const id = (ok.body as { id: string }).id;
    for (const url of ["https://169.254.169.254/", "https://rebind.example.com/x", "https://[::ffff:10.0.0.1]/"]) {
      const a = await ah.send("PATCH", `/v1/me/webhooks/${id}`, token, { url });
      expect(a.status, url).toBe(400);
    }
    const list = await ah.send("GET", "/v1/me/webhooks", token);
    expect((list.body as { data: { url: string }[] }).data.map((w) => w.url)).toEqual(["https://hooks.example.com/peg"]);
  });
});
