import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Runs `redocly lint` on an OpenAPI document: its exit code and output (telemetry and colours off). */
export async function redoclyLint(doc: unknown): Promise<{ code: number; out: string }> {
  const dir = mkdtempSync(join(tmpdir(), "peg-openapi-"));
  const file = join(dir, "openapi.json");
  writeFileSync(file, JSON.stringify(doc, null, 2));
  const bin = join(process.cwd(), "node_modules", ".bin", "redocly");
  try {
    const r = await run(bin, ["lint", file, "--format=stylish"], { cwd: process.cwd(), env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" } });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === "number" ? err.code : 1, out: `${err.stdout ?? ""}${err.stderr ?? ""}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
