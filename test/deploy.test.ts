import { createServer, connect, type Socket } from "node:net";
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { deployedNodeArgs } from "./scale/deploy-env.ts";
import { startTcpProxyProcess, type TcpProxyProcess } from "./scale/tcp-proxy.ts";

describe("what the scale-out tests and bench:cluster take from deploy/", () => {
  it("run each role with its systemd unit's node flags, the same as npm start's", () => {
    const start = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { scripts: Record<string, string> }).scripts["start"]!;
    const words = start.split(/\s+/);
    const startFlags = words.slice(1, words.indexOf("--import"));
    for (const role of ["engine", "api"] as const) {
      expect(deployedNodeArgs(role)).toEqual(startFlags);
      expect(deployedNodeArgs(role)).toContain("--max-semi-space-size=64");
    }
  });
});

describe("the TCP proxy in a process of its own (bench:cluster's network partition)", () => {
  const sockets: Socket[] = [];
  let proxy: TcpProxyProcess | null = null;
  const echo = createServer((s) => {
    sockets.push(s);
    s.pipe(s);
  });
  afterAll(async () => {
    await proxy?.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => echo.close(() => r()));
  });

  it("carries bytes, holds them while cut and lets them through once healed", { timeout: 60_000 }, async () => {
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
    const address = echo.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    proxy = await startTcpProxyProcess(address.port);
    const client = connect(proxy.port, "127.0.0.1");
    sockets.push(client);
    let received = "";
    client.on("data", (c: Buffer) => (received += c.toString()));
    const until = async (text: string) => {
      while (received !== text) await new Promise((r) => setTimeout(r, 10));
    };
    client.write("before");
    await until("before");
    await proxy.cut();
    client.write("-held");
    await new Promise((r) => setTimeout(r, 300));
    expect(received).toBe("before");
    await proxy.heal();
    await until("before-held");
    expect(received).toBe("before-held");
  });
});
