/**
 * A full disk under PGlite (issue 8): DATA_DIR is a small tmpfs the test mounts; mid-burst a file fills it to the
 * last byte, so PGlite writes that extend a file fail with ENOSPC (projector batches are redelivered, webhook
 * dispatch waits) while reads and in-place updates still succeed. `/readyz` must report it (the store has no room:
 * `Store.hasRoom`), the stored data must stay intact, and once the file is removed everything catches up. Mounting
 * needs root (CAP_SYS_ADMIN): without it the test is skipped with the reason in its name, never passed.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { waitFor } from "../support/ports.ts";
import { faultSuite } from "./fault-run.ts";
import { HOOK_PATHS } from "./harness.ts";

/** Room for PGlite's fresh cluster (about 40 MB) and the scenario's rows. */
const TMPFS_SIZE = "128M";

/** Why a tmpfs cannot be mounted here, or null when it can (checked by mounting and unmounting one). */
function cannotMount(): string | null {
  if (process.platform !== "linux") return `needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return "needs root (mount -t tmpfs needs CAP_SYS_ADMIN)";
  const probe = mkdtempSync(join(tmpdir(), "peg-tmpfs-probe-"));
  try {
    const m = spawnSync("mount", ["-t", "tmpfs", "-o", "size=1M", "tmpfs", probe], { encoding: "utf8" });
    if (m.status !== 0) return `mount -t tmpfs failed: ${(m.stderr || m.error?.message || "").trim()}`;
    spawnSync("umount", [probe]);
    return null;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

const skipReason = cannotMount();
const suite = faultSuite("disk", { skip: skipReason !== null });
const dataDir = join(suite.dir, "data");
let mounted = false;

// After the suite's hooks: this afterAll runs first, so the tmpfs is unmounted before the directory is removed.
beforeAll(() => {
  if (skipReason !== null) return;
  mkdirSync(dataDir);
  const m = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${TMPFS_SIZE}`, "tmpfs", dataDir], { encoding: "utf8" });
  if (m.status !== 0) throw new Error(`mount failed: ${m.stderr}`);
  mounted = true;
});
afterAll(() => {
  if (mounted) spawnSync("umount", ["-l", dataDir]);
});

function freeBytes(): number {
  const s = statfsSync(dataDir);
  return s.bavail * s.bsize;
}

if (skipReason !== null) {
  console.warn(`disk-full fault test skipped: ${skipReason}`);
  it.skip(`full disk for PGlite: SKIPPED, ${skipReason}`, () => {});
} else {
  it("a full disk makes the service unready without losing or corrupting anything; it recovers when space returns", async () => {
    const filler = join(dataDir, "filler");
    await suite.run({
      name: "disk-full",
      dataDir,
      hookPaths: [HOOK_PATHS.ok],
      inject: async (ctx) => {
        const from = Date.now();
        // dd stops at ENOSPC (status 1): the file system is then full to the last block.
        spawnSync("dd", ["if=/dev/zero", `of=${filler}`, "bs=1M"], { encoding: "utf8" });
        if (freeBytes() !== 0) throw new Error(`the tmpfs still has ${freeBytes()} bytes free`);
        // Kept full at least 10 s (projector batches fail and are redelivered meanwhile), and until /readyz has
        // reported it (at most 60 s; if it never does, the outage check fails with every answer it gave).
        await waitFor(() => Date.now() - from > 10_000 && ctx.readyz.some((r) => r.at > from && r.status !== 200), 60_000, "/readyz to report the full disk", 250).catch(() => {});
        // The fault really hit the store: writes failed for want of space.
        expect(ctx.service().stderr()).toMatch(/No space left on device/);
        // And /readyz said why.
        expect(ctx.readyz.filter((r) => r.at > from && r.status !== 200).map((r) => r.message)).toContainEqual(expect.stringContaining("database has no room to write (disk full)"));
        rmSync(filler);
        const to = Date.now();
        await ctx.readyAgain(to);
        return [{ what: "the full disk", from, to }];
      },
    });
  }, 400_000);
}
