/**
 * What every benchmark writes alongside its numbers: the machine it ran on, the load around it, and its own section
 * of docs/benchmarks.md (between `<!-- name:start -->` and `<!-- name:end -->`; other sections are left alone).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";

export const DOC_PATH = new URL("../docs/benchmarks.md", import.meta.url);

const HEADER = "# Benchmarks\n\nEvery number here is written by a benchmark script in `bench/`; rerun it to refresh its section.\n";

/** CPU model, visible cores, RAM, Node version and platform. */
export function machineDescription(): string {
  return `${cpus()[0]?.model ?? "unknown CPU"}, ${cpus().length} cores visible, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Node ${process.version}, ${process.platform}-${process.arch}`;
}

/** The 1, 5 and 15 minute load averages, e.g. "0.12 0.30 0.41". */
export function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
}

/** Today's date (UTC), as the sections print it. */
export const today = (): string => new Date().toISOString().slice(0, 10);

/**
 * Replaces the section `name` of docs/benchmarks.md with `section` (which must start with `<!-- name:start -->` and
 * end with `<!-- name:end -->`), or appends it (after the header, when `first`) if the document has none yet.
 */
export function writeSection(name: string, section: string, options: { first?: boolean } = {}): void {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  if (!section.startsWith(start) || !section.trimEnd().endsWith(end)) throw new Error(`section ${name} must be wrapped in ${start} ... ${end}`);
  let doc = existsSync(DOC_PATH) ? readFileSync(DOC_PATH, "utf8") : HEADER;
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  if (i >= 0 && j > i) doc = doc.slice(0, i) + section.trimEnd() + doc.slice(j + end.length);
  else if (options.first === true && doc.startsWith(HEADER)) doc = `${HEADER}\n${section.trimEnd()}\n\n${doc.slice(HEADER.length).trimStart()}`;
  else doc = `${doc.trimEnd()}\n\n${section.trimEnd()}\n`;
  writeFileSync(DOC_PATH, doc);
  console.log(`wrote the ${name} section of docs/benchmarks.md`);
}
