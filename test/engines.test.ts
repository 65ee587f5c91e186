/**
 * The Node version the project declares is one every installed dependency supports: `npm ci` prints no EBADENGINE
 * warning. Checked from the lockfile, which records each package's `engines.node` as published.
 */
import { readFileSync } from "node:fs";
import semver from "semver";
import { describe, expect, it } from "vitest";

interface LockPackage {
  version?: string;
  engines?: { node?: string } | string[];
  dev?: boolean;
  optional?: boolean;
}

const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { engines: { node: string } };
const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as { packages: Record<string, LockPackage> };

describe("engines", () => {
  it("the declared Node range is a valid range that the running Node satisfies", () => {
    expect(semver.validRange(pkg.engines.node)).not.toBeNull();
    expect(semver.satisfies(process.versions.node, pkg.engines.node)).toBe(true);
  });

  it("every locked dependency supports every Node the project declares", () => {
    const unsupported: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path === "") continue;
      const node = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (node === undefined) continue;
      // npm reports EBADENGINE when the running Node is outside a package's range; a range that covers the whole
      // declared range means no supported Node can see the warning.
      if (!semver.subset(pkg.engines.node, node, { includePrerelease: false })) {
        unsupported.push(`${path.replace(/^.*node_modules\//, "")}@${entry.version ?? "?"} needs node ${node}`);
      }
    }
    expect(unsupported).toEqual([]);
  });
});
