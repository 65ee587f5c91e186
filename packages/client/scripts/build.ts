/**
 * Builds what `@peg-oracle/client` ships (`npm run build -w packages/client`; `npm pack` runs it as `prepack`, `npm ci`
 * as `prepare`, `npm test` before anything else):
 *
 *   dist/index.js      ES module          (bundlers, `import`)
 *   dist/index.cjs     CommonJS module    (`require`)
 *   dist/index.d.ts    declarations       (one file; `index.d.cts` is the same text for `require` under NodeNext)
 *   dist/peg-verify.js the offline verifier's command (Node), which loads dist/index.js
 *   *.map              source maps of the JavaScript
 *
 * The methodology, canonical hashing, wire formats and webhook signature the package runs live in the service's
 * `src/methodology` and `src/wire`: one implementation, compiled into this build (esbuild and rollup-plugin-dts inline
 * the relative imports), so no shipped file imports anything outside the package. Runtime packages stay imports
 * (listed in `dependencies`), except in the CommonJS build, which inlines all but decimal.js (`@noble/*` and
 * `canonicalize` are published as ES modules only), so `require` works on every Node 20 line without require(esm).
 *
 *   node --import tsx packages/client/scripts/build.ts
 */
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build, type BuildOptions, type Plugin } from "esbuild";
import { rollup } from "rollup";
import { dts } from "rollup-plugin-dts";

const PKG = fileURLToPath(new URL("../", import.meta.url));
const DIST = `${PKG}dist/`;

/**
 * Packages left as `require` calls in dist/index.cjs: those with a CommonJS build whose named exports this package
 * imports. openapi-fetch is inlined there: its CommonJS build exports the client as `exports.default`, which a Node-mode
 * `require` interop would hand over as the whole module object.
 */
const CJS_EXTERNAL = ["decimal.js"];

const common: BuildOptions = {
  absWorkingDir: PKG,
  bundle: true,
  target: "es2022",
  sourcemap: true,
  charset: "utf8",
  legalComments: "inline",
  logLevel: "warning",
  // `ws` is an optional peer, loaded only where there is no global WebSocket (Node 20).
  external: ["ws"],
};

/** The verifier's command imports the package entry: resolved to the built ESM file beside it, not bundled twice. */
const entryAsSibling: Plugin = {
  name: "entry-as-sibling",
  setup(b) {
    b.onResolve({ filter: /^\.\.\/src\/index\.ts$/ }, () => ({ path: "./index.js", external: true }));
  },
};

async function javascript(): Promise<void> {
  await build({ ...common, entryPoints: ["src/index.ts"], outfile: "dist/index.js", format: "esm", platform: "neutral", packages: "external" });
  await build({
    ...common,
    entryPoints: ["src/index.ts"],
    outfile: "dist/index.cjs",
    format: "cjs",
    platform: "neutral",
    mainFields: ["module", "main"],
    external: [...(common.external ?? []), ...CJS_EXTERNAL],
  });
  await build({
    ...common,
    entryPoints: ["cli/peg-verify.ts"],
    outfile: "dist/peg-verify.js",
    format: "esm",
    platform: "node",
    packages: "external",
    plugins: [entryAsSibling],
    banner: { js: "#!/usr/bin/env node" },
  });
  chmodSync(`${DIST}peg-verify.js`, 0o755);
}

/** One declaration file for the whole public API, the methodology types it names inlined. */
async function declarations(): Promise<void> {
  const bundle = await rollup({
    input: `${PKG}src/index.ts`,
    plugins: [
      dts({
        tsconfig: `${PKG}tsconfig.json`,
        compilerOptions: { noEmit: false, declaration: true, emitDeclarationOnly: true, allowImportingTsExtensions: true },
      }),
    ],
    external: (id) => !id.startsWith(".") && !id.startsWith("/"),
    onwarn(warning, warn) {
      if (warning.code === "CIRCULAR_DEPENDENCY") return;
      warn(warning);
    },
  });
  const { output } = await bundle.generate({ format: "es" });
  await bundle.close();
  const text = output[0].code;
  writeFileSync(`${DIST}index.d.ts`, text);
  writeFileSync(`${DIST}index.d.cts`, text);
}

export async function buildPackage(): Promise<void> {
  rmSync(DIST, { recursive: true, force: true });
  mkdirSync(DIST, { recursive: true });
  await javascript();
  await declarations();
  const size = (f: string): string => `${f} ${readFileSync(`${DIST}${f}`).length} B`;
  process.stdout.write(`built ${["index.js", "index.cjs", "index.d.ts", "peg-verify.js"].map(size).join(", ")}\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  buildPackage().then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    },
  );
}
