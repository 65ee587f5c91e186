#!/usr/bin/env node
/**
 * Runs npm scripts side by side and reports each one whole, in the order they finish:
 *
 *   node .ci/parallel.mjs typecheck lint depcheck
 *
 * `npm test` runs its static checks so (about 30 s one after another, most of it two single-threaded tools on a
 * 2-core machine). Each script's output is held until it ends, then printed under one header line with its result
 * and time, so interleaved lines never hide which check said what. Every script runs to its end even when another
 * fails (all failures are reported at once); the exit code is 1 if any failed.
 */
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";

const names = process.argv.slice(2);
if (names.length === 0) {
  console.error("usage: node .ci/parallel.mjs <npm script>...");
  process.exit(2);
}

const run = (name) =>
  new Promise((resolve) => {
    const started = performance.now();
    const child = spawn("npm", ["run", name], { stdio: ["ignore", "pipe", "pipe"] });
    const chunks = [];
    child.stdout.on("data", (c) => chunks.push(c));
    child.stderr.on("data", (c) => chunks.push(c));
    let reported = false;
    const finish = (code, why) => {
      if (reported) return;
      reported = true;
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      const ok = code === 0;
      const output = Buffer.concat(chunks).toString().trimEnd();
      process.stdout.write(`── npm run ${name}: ${ok ? "ok" : `FAILED (${why})`} in ${seconds} s\n${output === "" ? "" : `${output}\n`}`);
      resolve(ok);
    };
    child.on("error", (e) => finish(1, e.message));
    child.on("close", (code, signal) => finish(code ?? 1, signal === null ? `exit code ${code}` : `signal ${signal}`));
  });

const results = await Promise.all(names.map(run));
const failed = names.filter((_, i) => !results[i]);
if (failed.length > 0) {
  console.error(`── failed: ${failed.join(", ")}`);
  process.exit(1);
}
