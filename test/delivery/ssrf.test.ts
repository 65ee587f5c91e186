import { describe, expect, it } from "vitest";
import { checkDestination, classifyAddress, ipv6Bytes, type RefusalReason, type Resolve } from "../../src/delivery/index.ts";

/** A fake DNS: known names answer from the table, others fail like ENOTFOUND. Counts every call. */
function fakeResolver(table: Record<string, readonly string[]>): Resolve & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (host: string): Promise<readonly string[]> => {
    calls.push(host);
    const answer = table[host];
    if (answer === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return answer;
  };
  return Object.assign(fn, { calls });
}

const DNS: Record<string, readonly string[]> = {
  "hooks.example.com": ["93.184.215.14"],
  "rebind.example.com": ["127.0.0.1"],
  "mixed.example.com": ["93.184.215.14", "10.0.0.5"],
  "mixed-late.example.com": ["93.184.215.14", "2606:4700::6810:84e5", "192.168.0.10"],
  "v6private.example.com": ["2606:4700::1", "fd12:3456::1"],
  "mapped.example.com": ["::ffff:169.254.169.254"],
  "127.0.0.1.nip.io": ["127.0.0.1"],
  "metadata-alias.example.com": ["169.254.169.254"],
  "cgnat.example.com": ["100.100.100.200"],
  "linklocal6.example.com": ["fe80::1"],
  "nat64-private.example.com": ["64:ff9b::a00:1"],
  "junk.example.com": ["not-an-address"],
  "zone.example.com": ["fe80::1%eth0"],
  "empty.example.com": [],
};

/** [url, expected reason, does the check resolve a name?] */
const HOSTILE: readonly (readonly [string, RefusalReason, boolean?])[] = [
  // IPv4 loopback in every notation the URL parser accepts
  ["https://127.0.0.1/", "forbidden_address"],
  ["https://2130706433/", "forbidden_address"],
  ["https://0x7f000001/", "forbidden_address"],
  ["https://0177.0.0.1/", "forbidden_address"],
  ["https://017700000001/", "forbidden_address"],
  ["https://127.1/", "forbidden_address"],
  ["https://0x7f.0.0.1/", "forbidden_address"],
  ["https://0177.0x0.1/", "forbidden_address"],
  ["https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", "forbidden_address"],
  ["https://127.0.0.1./", "forbidden_address"],
  ["https://127.255.255.254:8443/x", "forbidden_address"],
  // IPv4 private, link-local, metadata, CGNAT, reserved, multicast, broadcast, this-network
  ["https://10.0.0.1/", "forbidden_address"],
  ["https://172.16.5.4/", "forbidden_address"],
  ["https://172.31.255.255/", "forbidden_address"],
  ["https://192.168.1.1/", "forbidden_address"],
  ["https://169.254.169.254/latest/meta-data/", "forbidden_address"],
  ["https://0xa9fea9fe/", "forbidden_address"],
  ["https://2852039166/", "forbidden_address"],
  ["https://169.254.1.1/", "forbidden_address"],
  ["https://100.64.0.1/", "forbidden_address"],
  ["https://100.100.100.200/", "forbidden_address"],
  ["https://192.0.0.192/", "forbidden_address"],
  ["https://198.18.0.1/", "forbidden_address"],
  ["https://192.0.2.10/", "forbidden_address"],
  ["https://224.0.0.1/", "forbidden_address"],
  ["https://239.255.255.250/", "forbidden_address"],
  ["https://240.0.0.1/", "forbidden_address"],
  ["https://255.255.255.255/", "forbidden_address"],
  ["https://0.0.0.0/", "forbidden_address"],
  ["https://0/", "forbidden_address"],
  // IPv6
  ["https://[::1]/", "forbidden_address"],
  ["https://[0:0:0:0:0:0:0:1]/", "forbidden_address"],
  ["https://[::]/", "forbidden_address"],
  ["https://[::ffff:127.0.0.1]/", "forbidden_address"],
  ["https://[::ffff:7f00:1]/", "forbidden_address"],
  ["https://[0:0:0:0:0:ffff:a9fe:a9fe]/", "forbidden_address"],
  ["https://[::ffff:0a00:0001]/", "forbidden_address"],
  ["https://[::127.0.0.1]/", "forbidden_address"],
  ["https://[::8.8.8.8]/", "forbidden_address"],
  ["https://[64:ff9b::10.0.0.1]/", "forbidden_address"],
  ["https://[64:ff9b::7f00:1]/", "forbidden_address"],
  ["https://[64:ff9b:1::1]/", "forbidden_address"],
  ["https://[2002:7f00:1::]/", "forbidden_address"],
  ["https://[2002:c0a8:101::1]/", "forbidden_address"],
  ["https://[2002:a9fe:a9fe::1]/", "forbidden_address"],
  ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "forbidden_address"],
  ["https://[fe80::1]/", "forbidden_address"],
  ["https://[fe80::1%25eth0]/", "invalid_url"],
  ["https://[fc00::1]/", "forbidden_address"],
  ["https://[fd00:ec2::254]/", "forbidden_address"],
  ["https://[fec0::1]/", "forbidden_address"],
  ["https://[ff02::1]/", "forbidden_address"],
  ["https://[2001:db8::1]/", "forbidden_address"],
  ["https://[100::1]/", "forbidden_address"],
  // names
  ["https://localhost/", "forbidden_name"],
  ["https://LOCALHOST:8443/", "forbidden_name"],
  ["https://localhost./", "forbidden_name"],
  ["https://localhost../", "forbidden_name"],
  ["https://api.localhost/", "forbidden_name"],
  ["https://%6c%6fcalhost/", "forbidden_name"],
  ["https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", "forbidden_name"],
  ["https://printer.local/", "forbidden_name"],
  ["https://metadata.google.internal/computeMetadata/v1/", "forbidden_name"],
  ["https://metadata.google.internal./computeMetadata/v1/", "forbidden_name"],
  ["https://db.service.internal/", "forbidden_name"],
  ["https://router.home.arpa/", "forbidden_name"],
  ["https://nas.lan/", "forbidden_name"],
  ["https://intranet/", "forbidden_name"],
  ["https://wiki/", "forbidden_name"],
  ["https://redis:6379/", "forbidden_name"],
  ["https://metadata/", "forbidden_name"],
  ["https://a..example.com/", "forbidden_name"],
  // userinfo and parser tricks
  ["https://example.com@127.0.0.1/", "userinfo"],
  ["https://user:pass@hooks.example.com/", "userinfo"],
  ["https://hooks.example.com:443@evil.example.net/", "userinfo"],
  ["https://hooks.example.com%2F@127.0.0.1/", "userinfo"],
  ["https://127.0.0.1#@hooks.example.com/", "forbidden_address"],
  ["https://127.0.0.1\\@hooks.example.com/", "forbidden_address"],
  ["https://127.0.0.1?@hooks.example.com/", "forbidden_address"],
  // schemes and ports
  ["http://hooks.example.com/", "not_https"],
  ["HTTP://hooks.example.com/", "not_https"],
  ["ftp://hooks.example.com/", "not_https"],
  ["file:///etc/passwd", "not_https"],
  ["gopher://127.0.0.1:6379/_FLUSHALL", "not_https"],
  ["ws://hooks.example.com/", "not_https"],
  ["//hooks.example.com/", "invalid_url"],
  ["https://", "invalid_url"],
  ["https://hooks.example.com:0/", "bad_port"],
  ["https://hooks.example.com:65536/", "invalid_url"],
  [`https://hooks.example.com/${"a".repeat(2100)}`, "invalid_url"],
  // names resolving (through the injected resolver) to forbidden addresses: any one forbidden address refuses
  ["https://rebind.example.com/", "resolves_to_forbidden_address", true],
  ["https://mixed.example.com/", "resolves_to_forbidden_address", true],
  ["https://mixed-late.example.com/", "resolves_to_forbidden_address", true],
  ["https://v6private.example.com/", "resolves_to_forbidden_address", true],
  ["https://mapped.example.com/", "resolves_to_forbidden_address", true],
  ["https://127.0.0.1.nip.io/", "resolves_to_forbidden_address", true],
  ["https://metadata-alias.example.com/", "resolves_to_forbidden_address", true],
  ["https://cgnat.example.com/", "resolves_to_forbidden_address", true],
  ["https://linklocal6.example.com/", "resolves_to_forbidden_address", true],
  ["https://nat64-private.example.com/", "resolves_to_forbidden_address", true],
  ["https://junk.example.com/", "resolves_to_forbidden_address", true],
  ["https://zone.example.com/", "resolves_to_forbidden_address", true],
  ["https://nx.example.com/", "unresolvable", true],
  ["https://empty.example.com/", "unresolvable", true],
];

describe("checkDestination: hostile destinations", () => {
  it("has a corpus of at least 40 hostile destinations", () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(40);
  });

  const cases = HOSTILE.map(([url, reason, resolves]) => ({ url, reason, resolves: resolves === true }));
  it.each(cases)("refuses $url ($reason)", async ({ url, reason, resolves }) => {
    const resolve = fakeResolver(DNS);
    const res = await checkDestination(url, { resolve });
    expect(res.ok).toBe(false);
    if (res.ok) return;
    expect(res.reason).toBe(reason);
    expect(res.message.length).toBeGreaterThan(10);
    expect(res.apiError).toBe("invalid_body");
    expect(res.deliveryError).toBe(reason === "unresolvable" ? "dns" : "ssrf_blocked");
    // Literals and names refused by rule never reach DNS; a name is resolved exactly once.
    expect(resolve.calls.length).toBe(resolves ? 1 : 0);
  });

  it("names the range in the message", async () => {
    const resolve = fakeResolver(DNS);
    const message = async (url: string): Promise<string> => {
      const res = await checkDestination(url, { resolve });
      return res.ok ? "accepted" : res.message;
    };
    expect(await message("https://0xa9fea9fe/")).toMatch(/169\.254\.169\.254.*metadata/);
    expect(await message("https://[64:ff9b::10.0.0.1]/")).toMatch(/NAT64 10\.0\.0\.1: private/);
    expect(await message("https://mixed.example.com/")).toMatch(/10\.0\.0\.5/);
  });

  it("never throws, even when the resolver throws a non-Error", async () => {
    const res = await checkDestination("https://hooks.example.com/", { resolve: () => Promise.reject("boom") });
    expect(res).toMatchObject({ ok: false, reason: "unresolvable", deliveryError: "dns" });
  });
});

describe("checkDestination: legitimate destinations", () => {
  it("accepts a public name and pins the resolved address", async () => {
    const resolve = fakeResolver(DNS);
    const res = await checkDestination("https://Hooks.Example.COM/peg?asset=USDC#frag", { resolve });
    expect(res).toEqual({
      ok: true,
      url: "https://hooks.example.com/peg?asset=USDC#frag",
      hostname: "hooks.example.com",
      port: 443,
      path: "/peg?asset=USDC",
      pinnedAddress: "93.184.215.14",
      family: 4,
      addresses: ["93.184.215.14"],
      hostHeader: "hooks.example.com",
      servername: "hooks.example.com",
    });
    expect(resolve.calls).toEqual(["hooks.example.com"]);
  });

  it("keeps a non-default port in the Host header and drops a trailing dot", async () => {
    const resolve = fakeResolver({ "hooks.example.com": ["93.184.215.14"] });
    const res = await checkDestination("https://hooks.example.com.:8443/a/b", { resolve, allowedPorts: [8443] });
    expect(res).toMatchObject({ ok: true, port: 8443, path: "/a/b", hostHeader: "hooks.example.com:8443", servername: "hooks.example.com" });
    expect(resolve.calls).toEqual(["hooks.example.com"]);
  });

  it("pins the first of several public addresses and reports them all", async () => {
    const resolve = fakeResolver({ "multi.example.com": ["2606:4700::6810:84e5", "93.184.215.14", "93.184.215.14"] });
    const res = await checkDestination("https://multi.example.com/", { resolve });
    expect(res).toMatchObject({ ok: true, pinnedAddress: "2606:4700::6810:84e5", family: 6, addresses: ["2606:4700::6810:84e5", "93.184.215.14"] });
    expect(resolve.calls.length).toBe(1);
  });

  it("accepts NAT64 and IPv4-mapped forms of public addresses (a mapped one is pinned as IPv4)", async () => {
    const resolve = fakeResolver({ "nat64.example.com": ["64:ff9b::808:808"], "mapped-public.example.com": ["::ffff:8.8.8.8"] });
    expect(await checkDestination("https://nat64.example.com/", { resolve })).toMatchObject({ ok: true, pinnedAddress: "64:ff9b::808:808", family: 6 });
    expect(await checkDestination("https://mapped-public.example.com/", { resolve })).toMatchObject({ ok: true, pinnedAddress: "8.8.8.8", family: 4 });
  });

  it.each([
    ["https://8.8.8.8/hook", "8.8.8.8", "8.8.8.8"],
    ["https://134744072/", "8.8.8.8", "8.8.8.8"],
    ["https://172.32.0.1/", "172.32.0.1", "172.32.0.1"],
    ["https://100.128.0.1/", "100.128.0.1", "100.128.0.1"],
    ["https://192.169.0.1/", "192.169.0.1", "192.169.0.1"],
    ["https://169.255.0.1/", "169.255.0.1", "169.255.0.1"],
    ["https://223.255.255.254/", "223.255.255.254", "223.255.255.254"],
    ["https://[2606:4700:4700::1111]:8443/", "2606:4700:4700::1111", "[2606:4700:4700::1111]:8443"],
    ["https://[2002:808:808::1]/", "2002:808:808::1", "[2002:808:808::1]"],
  ])("accepts the public literal %s without any lookup", async (url, pinned, hostHeader) => {
    const resolve = fakeResolver({});
    const res = await checkDestination(url, { resolve, allowedPorts: [8443] });
    expect(res).toMatchObject({ ok: true, pinnedAddress: pinned, addresses: [pinned], hostHeader, servername: undefined });
    expect(resolve.calls).toEqual([]);
  });

  it("checks again at delivery: a name rebound to a private address after registration is refused", async () => {
    const answers = [["93.184.215.14"], ["127.0.0.1"]];
    let calls = 0;
    const resolve: Resolve = async () => answers[calls++]!;
    const atRegistration = await checkDestination("https://flip.example.com/", { resolve });
    expect(atRegistration).toMatchObject({ ok: true, pinnedAddress: "93.184.215.14" });
    const atDelivery = await checkDestination("https://flip.example.com/", { resolve });
    expect(atDelivery).toMatchObject({ ok: false, reason: "resolves_to_forbidden_address", deliveryError: "ssrf_blocked" });
    expect(calls).toBe(2);
  });
});

describe("checkDestination: allowLoopbackForTests", () => {
  const resolve = (): ReturnType<typeof fakeResolver> => fakeResolver({ localhost: ["127.0.0.1", "::1"], "hooks.example.com": ["127.0.0.1"] });

  it("lets loopback through, and only loopback", async () => {
    expect(await checkDestination("https://localhost:9443/h", { resolve: resolve(), allowLoopbackForTests: true, allowedPorts: [9443] })).toMatchObject({
      ok: true,
      pinnedAddress: "127.0.0.1",
      addresses: ["127.0.0.1", "::1"],
      hostHeader: "localhost:9443",
    });
    expect(await checkDestination("https://127.0.0.1:9443/", { resolve: resolve(), allowLoopbackForTests: true, allowedPorts: [9443] })).toMatchObject({ ok: true });
    expect(await checkDestination("https://[::1]:9443/", { resolve: resolve(), allowLoopbackForTests: true, allowedPorts: [9443] })).toMatchObject({ ok: true, family: 6 });
    expect(await checkDestination("https://hooks.example.com/", { resolve: resolve(), allowLoopbackForTests: true })).toMatchObject({ ok: true });
    for (const url of ["https://10.0.0.1/", "https://169.254.169.254/", "https://[fe80::1]/", "https://x.internal/", "http://localhost/", "https://u@localhost/"]) {
      expect(await checkDestination(url, { resolve: resolve(), allowLoopbackForTests: true }), url).toMatchObject({ ok: false });
    }
  });

  it("is off by default", async () => {
    expect(await checkDestination("https://hooks.example.com/", { resolve: resolve() })).toMatchObject({ ok: false, reason: "resolves_to_forbidden_address" });
  });
});

describe("classifyAddress and ipv6Bytes", () => {
  it("expands IPv6 text, with and without an embedded IPv4 tail", () => {
    expect(Buffer.from(ipv6Bytes("::ffff:127.0.0.1")!).toString("hex")).toBe("00000000000000000000ffff7f000001");
    expect(Buffer.from(ipv6Bytes("2001:db8::1")!).toString("hex")).toBe("20010db8000000000000000000000001");
    expect(Buffer.from(ipv6Bytes("1:2:3:4:5:6:7:8")!).toString("hex")).toBe("00010002000300040005000600070008");
    expect(Buffer.from(ipv6Bytes("::")!).toString("hex")).toBe("0".repeat(32));
    expect(ipv6Bytes("127.0.0.1")).toBeNull();
    expect(ipv6Bytes("fe80::1%eth0")).toBeNull();
  });

  it("refuses special space outside 2000::/3 that has no rule of its own", () => {
    expect(classifyAddress("4000::1")).toMatchObject({ allowed: false, range: "outside global unicast (2000::/3)" });
    expect(classifyAddress("2a00:1450:4001::200e")).toMatchObject({ allowed: true, family: 6 });
  });

  it("refuses text that is not an IP address", () => {
    expect(classifyAddress("example.com")).toMatchObject({ allowed: false });
    expect(classifyAddress("0x7f000001")).toMatchObject({ allowed: false });
    expect(classifyAddress("")).toMatchObject({ allowed: false });
  });
});
