import { defaultServerConditions } from "vite";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * Two suites. `npm test` runs the fast one: unit and integration tests against real servers, a few minutes on 2 cores.
 * `npm run test:slow` (PEG_SLOW=1) runs the slow one: the tests that kill, stop and restart the service or its servers
 * and wait out what a real restart costs (faults, the webhook schedule across a restart), the two-engine scale-out
 * and the browser run. `.ci/run` runs both. Where the time went is in the README's Tests section.
 */
export const SLOW_SUITE = ["test/faults/**/*.test.ts", "test/scale/**/*.test.ts", "test/browser/**/*.test.ts", "test/webhooks/restart.test.ts", "test/package/**/*.test.ts", "test/mcp/conformance.test.ts"];

const slow = process.env["PEG_SLOW"] === "1";

/**
 * `@peg-oracle/client` resolves to its TypeScript source in this repository's tests (the `@peg-oracle/source` export
 * condition, as in tsconfig.json), so a change to the package is tested without a build; what the package ships
 * (`dist/`, built by `npm run client:build`) is tested from its tarball by test/client/package-tarball.test.ts.
 */
const SOURCE_CONDITIONS = ["@peg-oracle/source", ...defaultServerConditions];

export default defineConfig({
  resolve: { conditions: SOURCE_CONDITIONS },
  ssr: { resolve: { conditions: SOURCE_CONDITIONS, externalConditions: ["@peg-oracle/source"] } },
  test: {
    include: slow ? SLOW_SUITE : ["test/**/*.test.ts", "src/**/*.test.ts"],
    exclude: slow ? configDefaults.exclude : [...configDefaults.exclude, ...SLOW_SUITE],
    // The fast suite waits on servers and timers far more than it computes (load stays near 1 on 2 cores with two
    // workers), so it runs more files at once. The slow suite keeps the default: its fault runs drive the service on
    // a scaled clock and are sized for two files at a time.
    ...(slow ? {} : { maxWorkers: 4 }),
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
