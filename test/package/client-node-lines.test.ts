/**
 * The client package's own tests (test/client, but the one that starts the service in-process: uWebSockets.js loads on
 * Node 20 only) on Node 22 and 24 too, each run by vitest under that line's binary from the npm registry. On Node 20
 * they run in the fast suite.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { nodeBinary, NODE_LINES } from "../support/node-lines.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function vitestOn(bin: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const args = ["node_modules/vitest/vitest.mjs", "run", "test/client", "--exclude", "test/client/service.test.ts"];
    const child = spawn(bin, args, { cwd: ROOT, env: { ...process.env, PEG_SLOW: "", CI: "true", NO_COLOR: "1", FORCE_COLOR: "0" }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.on("close", (code) => resolve({ code: code ?? -1, output }));
  });
}

describe.each(NODE_LINES)("the client's tests on Node %s", (version) => {
  it("pass", async () => {
    const bin = await nodeBinary(version);
    const { code, output } = await vitestOn(bin);
    expect(code, output.slice(-4000)).toBe(0);
    expect(output).toMatch(/Test Files\s.*\d+ passed/);
    expect(output).not.toMatch(/Test Files\s.*failed/);
  }, 300_000);
});
