/**
 * The MCP server over stdio (`peg-oracle mcp`): one SDK server for the life of the connection. stdout carries the
 * protocol only; anything else a process writes goes to stderr. Resolves when the client closes stdin (or `stop`).
 */
import type { Readable, Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { serverFor, type PreparedSpec } from "./server.ts";

export interface StdioSession {
  /** Resolves when the connection has ended. */
  readonly closed: Promise<void>;
  /** Ends the connection. Idempotent. */
  stop(): Promise<void>;
}

export async function serveStdio(spec: PreparedSpec, stdin: Readable, stdout: Writable): Promise<StdioSession> {
  const transport = new StdioServerTransport(stdin, stdout);
  const server = serverFor(spec);
  let ended: () => void = () => {};
  const closed = new Promise<void>((resolve) => (ended = resolve));
  server.onclose = () => ended();
  await server.connect(transport);
  let stopping: Promise<void> | null = null;
  const stop = () => (stopping ??= server.close().then(() => ended()));
  // The SDK's transport does not watch for the end of its input: a client that closes stdin ends the session.
  stdin.once("end", () => void stop());
  stdin.once("close", () => void stop());
  return { closed, stop };
}
