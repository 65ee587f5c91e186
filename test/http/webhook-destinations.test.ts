/**
 * Webhook destinations through the API (issue 14, security): every hostile URL of the corpus is refused with 400
 * `invalid_body` on POST and on PATCH of an existing webhook, nothing hostile is stored; and a destination port other
 * than 443 is refused unless WEBHOOK_ALLOWED_PORTS lists it, at registration and again at delivery, so `/test` and a
 * delivery record's error cannot be used as a port scanner of public hosts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config.ts";
import { attemptDelivery, type Resolve } from "../../src/delivery/index.ts";
import { accountsHarness, type AccountsHarness } from "./helpers.ts";

/** Ports of other services on public hosts: what a port scan through the webhook routes would probe. */
const PORT_SCAN = [
  "https://8.8.8.8:6379/",
  "https://8.8.8.8:22/",
  "https://[2606:4700:4700::1111]:5432/",
  "https://hooks.example.com:8443/peg",
  "https://hooks.example.com:80/",
  "https://hooks.example.com:1/",
  "https://hooks.example.com:65535/",
  "https://hooks.example.com.:11211/",
];

/**
 * Hostile destinations (the corpus of the outside audit's attack run, kept here so it stays refused): private,
 * loopback, link-local and metadata addresses in every notation, special-use and intranet names, names resolving to
 * such addresses (the harness's fake DNS), userinfo and parser tricks, other schemes, and other ports.
 */
const HOSTILE: readonly string[] = [
  // IPv4 loopback in every notation the URL parser accepts
  "https://127.0.0.1/x", "https://127.1/x", "https://2130706433/x", "https://0x7f000001/x", "https://0177.0.0.1/x",
  "https://017700000001/", "https://0x7f.0.0.1/x", "https://0177.0x0.1/", "https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/",
  "https://127.0.0.1./", "https://127.255.255.254:8443/x", "https://0/x", "https://0.0.0.0/x",
  // IPv4 private, link-local, metadata, CGNAT, reserved, multicast, broadcast
  "https://10.0.0.1/x", "https://10.255.255.255/x", "https://172.16.0.1/x", "https://172.31.255.254/x", "https://192.168.1.1/x",
  "https://169.254.169.254/latest/meta-data/", "https://0xa9fea9fe/", "https://2852039166/", "https://169.254.0.1/x",
  "https://100.64.0.1/x", "https://100.100.100.200/", "https://192.0.0.1/x", "https://192.0.0.192/", "https://198.18.0.1/x",
  "https://192.0.2.10/", "https://224.0.0.1/x", "https://239.255.255.250/", "https://240.0.0.1/x", "https://255.255.255.255/x",
  // IPv6
  "https://[::1]/x", "https://[0:0:0:0:0:0:0:1]/", "https://[::]/x", "https://[::ffff:127.0.0.1]/x", "https://[::ffff:7f00:1]/x",
  "https://[::ffff:169.254.169.254]/x", "https://[0:0:0:0:0:ffff:a9fe:a9fe]/", "https://[::ffff:0a00:0001]/", "https://[::127.0.0.1]/",
  "https://[::8.8.8.8]/", "https://[64:ff9b::a00:1]/x", "https://[64:ff9b::7f00:1]/", "https://[64:ff9b:1::1]/",
  "https://[2002:7f00:1::]/", "https://[2002:c0a8:101::1]/x", "https://[2002:a9fe:a9fe::1]/",
  "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "https://[fe80::1]/x", "https://[fe80::1%25eth0]/", "https://[fc00::1]/x",
  "https://[fd12:3456::1]/x", "https://[fd00:ec2::254]/", "https://[fec0::1]/", "https://[ff02::1]/x", "https://[2001:db8::1]/",
  "https://[100::1]/",
  // names
  "https://localhost/x", "https://LOCALHOST/x", "https://LOCALHOST:8443/", "https://localhost./x", "https://localhost../",
  "https://api.localhost/x", "https://%6c%6fcalhost/", "https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",
  "https://printer.local/x", "https://db.internal/x", "https://metadata.google.internal/computeMetadata/v1/",
  "https://metadata.google.internal./computeMetadata/v1/", "https://db.service.internal/", "https://router.home.arpa/",
  "https://nas.lan/", "https://intranet/x", "https://wiki/", "https://redis:6379/", "https://metadata/", "https://a..example.com/",
  // names the fake DNS resolves to forbidden addresses, or not at all
  "https://rebind.example.com/x", "https://mixed.example.com/x", "https://nonexistent.example.org/x",
  // userinfo and parser tricks
  "https://user:pass@hooks.example.com/x", "https://hooks.example.com@127.0.0.1/x", "https://hooks.example.com:443@evil.example.net/",
  "https://hooks.example.com%2F@127.0.0.1/", "https://127.0.0.1#@hooks.example.com/", "https://127.0.0.1\\@hooks.example.com/",
  "https://127.0.0.1?@hooks.example.com/",
  // schemes, malformed URLs, lengths and ports
  "http://hooks.example.com/x", "HTTP://hooks.example.com/", "ftp://hooks.example.com/x", "file:///etc/passwd",
  "gopher://127.0.0.1:6379/_FLUSHALL", "ws://hooks.example.com/", "//hooks.example.com/", "https://", "not a url",
  "https://hooks.example.com:0/", "https://hooks.example.com:65536/", `https://hooks.example.com/${"a".repeat(2100)}`,
  ...PORT_SCAN,
];

type Body = { error?: string; message?: string; id?: string; data?: { url: string }[] };

describe("WEBHOOK_ALLOWED_PORTS", () => {
  it("is a comma-separated list of ports 1-65535, empty by default; anything else refuses to start", () => {
    expect(parseConfig({}).webhookAllowedPorts).toEqual([]);
    expect(parseConfig({ WEBHOOK_ALLOWED_PORTS: " 9443, 8443,8443 ," }).webhookAllowedPorts).toEqual([8443, 9443]);
    for (const bad of ["0", "65536", "abc", "84 43", "-1", "08443", "8443.0", "8443,x", "1e3"]) {
      const e = (() => {
        try {
          parseConfig({ WEBHOOK_ALLOWED_PORTS: bad });
        } catch (err) {
          return err;
        }
        return null;
      })();
      expect(e, bad).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).issues.map((i) => i.name), bad).toEqual(["WEBHOOK_ALLOWED_PORTS"]);
    }
  });
});

describe("webhook destinations through POST and PATCH (default: port 443 only)", () => {
  let ah: AccountsHarness;
  let token: string;
  let hookId: string;

  beforeAll(async () => {
    ah = await accountsHarness();
    token = (await ah.login(7101, "Mallory")).token;
    const ok = await ah.send("POST", "/v1/me/webhooks", token, { url: "https://hooks.example.com/peg", asset: "USDC", threshold_bps: 50 });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    hookId = (ok.body as Body).id!;
  }, 60_000);
  afterAll(async () => {
    await ah?.close();
  });

  const stored = async (): Promise<string[]> => ((await ah.send("GET", "/v1/me/webhooks", token)).body as Body).data!.map((w) => w.url);

  it(`refuses all ${HOSTILE.length} hostile destinations on POST, and stores none`, async () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(100);
    for (const url of HOSTILE) {
      const a = await ah.send("POST", "/v1/me/webhooks", token, { url, asset: "USDC", threshold_bps: 50 });
      expect(a.status, `${url}: ${JSON.stringify(a.body)}`).toBe(400);
      expect((a.body as Body).error, url).toBe("invalid_body");
    }
    expect(await stored()).toEqual(["https://hooks.example.com/peg"]);
  });

  it(`refuses all ${HOSTILE.length} hostile destinations on PATCH, and keeps the URL`, async () => {
    for (const url of HOSTILE) {
      const a = await ah.send("PATCH", `/v1/me/webhooks/${hookId}`, token, { url });
      expect(a.status, `${url}: ${JSON.stringify(a.body)}`).toBe(400);
      expect((a.body as Body).error, url).toBe("invalid_body");
    }
    expect(await stored()).toEqual(["https://hooks.example.com/peg"]);
  });

  it("names the port rule in the refusal, and accepts 443 given explicitly", async () => {
    for (const method of ["POST", "PATCH"] as const) {
      const a =
        method === "POST"
          ? await ah.send("POST", "/v1/me/webhooks", token, { url: "https://8.8.8.8:6379/", asset: "USDC", threshold_bps: 50 })
          : await ah.send("PATCH", `/v1/me/webhooks/${hookId}`, token, { url: "https://8.8.8.8:6379/" });
      expect(a.status, method).toBe(400);
      expect(a.body, method).toMatchObject({ error: "invalid_body", message: "url: port 6379 is not allowed: webhook URLs may use port 443 only" });
    }
    const explicit = await ah.send("PATCH", `/v1/me/webhooks/${hookId}`, token, { url: "https://8.8.8.8:443/peg" });
    expect(explicit.status, JSON.stringify(explicit.body)).toBe(200);
    expect(await stored()).toEqual(["https://8.8.8.8/peg"]);
  });
});

describe("webhook destinations with WEBHOOK_ALLOWED_PORTS=8443", () => {
  let ah: AccountsHarness;
  let token: string;
  beforeAll(async () => {
    ah = await accountsHarness(undefined, { allowedPorts: [8443] });
    token = (await ah.login(7102, "Trent")).token;
  }, 60_000);
  afterAll(async () => {
    await ah?.close();
  });

  it("accepts a listed port on POST and PATCH, and still refuses the others and private hosts on it", async () => {
    const a = await ah.send("POST", "/v1/me/webhooks", token, { url: "https://hooks.example.com:8443/peg", asset: "USDC", threshold_bps: 50 });
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    const id = (a.body as Body).id!;
    expect((await ah.send("PATCH", `/v1/me/webhooks/${id}`, token, { url: "https://8.8.8.8:8443/x" })).status).toBe(200);
    for (const url of ["https://hooks.example.com:8444/", "https://8.8.8.8:6379/", "https://10.0.0.1:8443/", "https://rebind.example.com:8443/"]) {
      const post = await ah.send("POST", "/v1/me/webhooks", token, { url, asset: "USDC", threshold_bps: 50 });
      expect(post.status, url).toBe(400);
      const patch = await ah.send("PATCH", `/v1/me/webhooks/${id}`, token, { url });
      expect(patch.status, url).toBe(400);
    }
    const refused = await ah.send("POST", "/v1/me/webhooks", token, { url: "https://8.8.8.8:6379/", asset: "USDC", threshold_bps: 50 });
    expect((refused.body as Body).message).toBe("url: port 6379 is not allowed: webhook URLs may use ports 443, 8443 only");
  });
});

describe("the delivery attempt checks the port again", () => {
  it("fails ssrf_blocked without resolving or connecting when the port is not allowed (a URL stored before the rule)", async () => {
    const lookups: string[] = [];
    const resolve: Resolve = async (host) => {
      lookups.push(host);
      return ["93.184.215.14"];
    };
    for (const url of ["https://8.8.8.8:6379/", "https://hooks.example.com:22/"]) {
      const res = await attemptDelivery({ url, body: "{}", headers: {}, resolve, now: () => Date.now(), timeoutMs: 2_000 });
      expect(res, url).toMatchObject({ status: "failed", error: "ssrf_blocked", responseStatus: null, address: null });
    }
    expect(lookups).toEqual([]);
  });
});
