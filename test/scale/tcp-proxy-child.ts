/**
 * `startTcpProxy` in a process of its own (`startTcpProxyProcess`): `node --import tsx tcp-proxy-child.ts <port>`
 * prints `{"port":N}`, then takes `cut`, `heal` and `close` lines on stdin and answers each with `ok <command>`.
 */
import { createInterface } from "node:readline";
import { startTcpProxy } from "./tcp-proxy.ts";

const proxy = await startTcpProxy(Number(process.argv[2]));
process.stdout.write(`${JSON.stringify({ port: proxy.port })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  const command = line.trim();
  if (command === "cut") proxy.cut();
  else if (command === "heal") proxy.heal();
  else if (command === "close") await proxy.close();
  else continue;
  process.stdout.write(`ok ${command}\n`);
  if (command === "close") break;
}
process.exit(0);
