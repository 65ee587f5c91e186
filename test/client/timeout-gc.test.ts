/**
 * The client's timeout holds whatever the garbage collector does. It used `AbortSignal.any([signal,
 * AbortSignal.timeout(ms)])` on a new Request: Node may collect the timeout signal held only by the composite
 * (nodejs/node#57736), and a Request follows its signal through a weak link a collection can cut
 * (nodejs/undici#3644), so a request to a server that never answered could wait for ever (the client's own test timed
 * out so in CI, on Node 22). With a collection every 5 ms every request must settle by its 50 ms timeout.
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
