/**
 * PGlite on disk, owner-only (issue 14). PGlite's Emscripten filesystem ignores the process umask: it creates files
 * and then chmods them to the mode PostgreSQL asked for, and PostgreSQL's `fopen`-style files (initdb's files, the WAL
 * segment initdb writes and later recycles, `pg_internal.init` rewritten at every start) ask for 0666. This
 * filesystem masks the group and other bits out of every mode PGlite creates or sets, so the data directory holds
 * 0700 directories and 0600 files from the first initdb on. `openPgliteDir` also tightens a directory left loose by
 * an earlier build.
 */
import { PGlite } from "@electric-sql/pglite";
import { NodeFS } from "@electric-sql/pglite/nodefs";
import { LOOSE_BITS, ownerOnlyDir, tightenTree } from "../owner-only.ts";

type PostgresModOpts = Parameters<NodeFS["init"]>[1];
type PreRun = NonNullable<PostgresModOpts["preRun"]>[number];
type EmscriptenFs = Record<string, unknown>;

/** The Emscripten FS calls that take a mode: creation (`mknod`, under `mkdir`/`create`/`open`) and the chmods. */
const MODE_ARG = ["mknod", "chmod", "lchmod", "fchmod"] as const;

/** Masks group and other bits out of the mode argument (the second) of each call in MODE_ARG. */
function maskModes(fs: EmscriptenFs): void {
  for (const name of MODE_ARG) {
    const original = fs[name];
    if (typeof original !== "function") throw new Error(`PGlite's filesystem has no ${name}(): cannot keep its files owner-only`);
    fs[name] = function (this: unknown, target: unknown, mode: unknown, ...rest: unknown[]) {
      return (original as (...a: unknown[]) => unknown).call(fs, target, typeof mode === "number" ? mode & ~LOOSE_BITS : mode, ...rest);
    };
  }
}

/** PGlite's NodeFS with every created or changed mode owner-only. */
export class OwnerOnlyNodeFS extends NodeFS {
  override async init(pg: PGlite, opts: PostgresModOpts): ReturnType<NodeFS["init"]> {
    const { emscriptenOpts } = await super.init(pg, opts);
    // After NodeFS's own preRun (which mounts the directory), before initdb or PostgreSQL touch a file.
    const mask: PreRun = (mod) => maskModes(mod.FS as unknown as EmscriptenFs);
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), mask] } };
  }
}

/**
 * Opens PGlite on `dir` (created 0700), after tightening what is already there. Throws when something in it cannot be
 * made owner-only (it belongs to another user): such a file could be read or rewritten behind the service's back.
 */
export function openPgliteDir(dir: string): PGlite {
  ownerOnlyDir(dir);
  const { failed } = tightenTree(dir);
  if (failed.length > 0) {
    throw new Error(`${dir}: ${failed.length} entries cannot be made owner-only (another user owns them), e.g. ${failed[0]}; fix their owner or mode`);
  }
  return new PGlite({ fs: new OwnerOnlyNodeFS(dir) });
}
