/**
 * The client's timeout holds whatever the garbage collector does. It sends `AbortSignal.any([signal,
 * AbortSignal.timeout(ms)])` on a new Request, and Node holds the timeout signal, the composite's sources and the
 * Request's link to its signal only weakly (nodejs/node#57736, nodejs/undici#3644): with nothing else holding them, a
 * request to a server that never answered could wait for ever (the client's own test timed out so in CI, on Node 22).
 * The client now keeps them reachable while the fetch is in flight. With a collection every 5 ms every request must
 * settle by its 50 ms timeout (20 of 20 hung before).
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

describe("PegClient timeout under garbage collection", () => {
  it("settles every request by its timeout while collections run", () => {
    const r = spawnSync(process.execPath, ["--expose-gc", "--conditions=@peg-oracle/source", "--import", "tsx", "test/client/fixtures/timeout-under-gc.ts"], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim())).toEqual({ settled: 20, hung: 0 });
  });
});
