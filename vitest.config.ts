import { configDefaults, defineConfig } from "vitest/config";

/**
 * The fault suite of issue 8 (about 90 s per file, 7-8 minutes together on 2 cores): run by `npm run test:faults`
 * (which sets PEG_FAULTS=1), left out of the default run. The older fault tests in test/faults stay in both.
 */
const FAULT_SUITE = ["nats-restart", "postgres-restart", "kill-burst", "receivers", "disk-full"].map((n) => `test/faults/${n}.test.ts`);

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    exclude: process.env["PEG_FAULTS"] === "1" ? configDefaults.exclude : [...configDefaults.exclude, ...FAULT_SUITE],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: process.env["CI"] ? ["default"] : ["default"],
  },
});
