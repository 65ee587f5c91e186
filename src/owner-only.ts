/**
 * Owner-only local state (issue 14): `DATA_DIR` and everything the service keeps under it (PGlite's files and WAL, the
 * embedded nats-server's JetStream store, the generated secrets key, the server's URL and pid files) are readable and
 * writable by the service's user only: directories 0700, files 0600. Other local users must not read the receipts'
 * database or the keys, nor rewrite them.
 */
import { chmodSync, closeSync, fchmodSync, lstatSync, mkdirSync, openSync, readdirSync, writeFileSync, type Stats } from "node:fs";
import { join } from "node:path";

export const OWNER_DIR_MODE = 0o700;
export const OWNER_FILE_MODE = 0o600;
/** Group and other permission bits: none may be set under DATA_DIR. */
export const LOOSE_BITS = 0o077;

/**
 * Makes files this process creates from now on owner-only (umask 077), including those of the child processes it
 * starts (the embedded nats-server creates its store with 0750/0640 under the usual umask 022). Returns false where
 * the umask cannot be set (a worker thread).
 */
export function restrictUmask(): boolean {
  try {
    process.umask(LOOSE_BITS);
    return true;
  } catch {
    return false;
  }
}

/**
 * Creates `dir` (and missing parents) as 0700, and makes an existing `dir` 0700. A shared directory (sticky bit, such
 * as /tmp) is never changed: it is not the service's own, and `DATA_DIR` must not point there. Returns whether `dir`
 * is now owner-only.
 */
export function ownerOnlyDir(dir: string): boolean {
  mkdirSync(dir, { recursive: true, mode: OWNER_DIR_MODE });
  const st = lstatSync(dir);
  if ((st.mode & 0o1000) !== 0) return false;
  if ((st.mode & 0o777) !== OWNER_DIR_MODE) chmodSync(dir, OWNER_DIR_MODE);
  return true;
}

/** What `tightenTree` did: entries it changed, and the ones it could not change (owned by someone else). */
export interface Tightened {
  readonly changed: number;
  readonly failed: readonly string[];
}

function tighten(path: string, st: Stats, out: { changed: number; failed: string[] }): void {
  const wanted = st.isDirectory() ? (st.mode & 0o700) | OWNER_DIR_MODE : st.mode & 0o700;
  if ((st.mode & 0o7777) === wanted) return;
  try {
    chmodSync(path, wanted);
    out.changed++;
  } catch {
    out.failed.push(path);
  }
}

/**
 * Removes group and other permissions from `path` and, when it is a directory, from everything under it (directories
 * keep owner rwx). Symbolic links are neither changed nor followed. A missing `path` is nothing to do.
 */
export function tightenTree(path: string): Tightened {
  const out = { changed: 0, failed: [] as string[] };
  const visit = (p: string): void => {
    let st: Stats;
    try {
      st = lstatSync(p);
    } catch {
      return; // gone meanwhile
    }
    if (st.isSymbolicLink()) return;
    tighten(p, st, out);
    if (!st.isDirectory()) return;
    let names: string[];
    try {
      names = readdirSync(p);
    } catch {
      out.failed.push(p);
      return;
    }
    for (const name of names) visit(join(p, name));
  };
  visit(path);
  return out;
}

/** Writes `data` to `path` as an owner-only file (0600, also when it existed with another mode). */
export function writeOwnerOnlyFile(path: string, data: string | Uint8Array, flag: "w" | "wx" = "w"): void {
  const fd = openSync(path, flag, OWNER_FILE_MODE);
  try {
    fchmodSync(fd, OWNER_FILE_MODE);
    writeFileSync(fd, data);
  } finally {
    closeSync(fd);
  }
}
