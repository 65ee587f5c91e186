/**
 * The npm packages the dashboard runs in the browser, served from node_modules (nothing from a CDN, no build step
 * when the service starts): the client library `@peg-oracle/client` as its committed browser module
 * (packages/client/browser/peg-client.js, built by `npm run client:browser` and checked for drift by
 * test/client/bundle-drift.test.ts), whose PegStream is the pages' live connection and whose verifyReceipt is the
 * receipt page's check. Only the files listed here are served, each at a fixed URL under /static/vendor/. The pages
 * map the bare specifier to that URL with an import map (public/*.html), so the same page modules import unchanged
 * under Node, where the specifier resolves to the package's TypeScript entry.
 */
import { statSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The allow-list: URL path, the package specifier Node resolves (through the package's `exports`), and the file
 * relative to that resolved module (the client's browser module sits beside its TypeScript entry, src/index.ts).
 */
export const VENDOR_FILES: ReadonlyArray<readonly [url: string, specifier: string, file: string]> = [
  ["/static/vendor/peg-client.js", "@peg-oracle/client", "../browser/peg-client.js"],
];

/** Why a vendored file is missing: the dashboard's live view and receipt check would break, so the service does not start. */
export class VendorFileError extends Error {
  override readonly name = "VendorFileError";
}

/**
 * The file-system path of every allow-listed file by URL path. Throws `VendorFileError` when a package or file is
 * missing (an incomplete `npm ci`).
 */
export function vendorFilePaths(): Map<string, string> {
  const paths = new Map<string, string>();
  for (const [url, specifier, file] of VENDOR_FILES) {
    let path: string;
    try {
      path = fileURLToPath(new URL(file, import.meta.resolve(specifier)));
    } catch (err) {
      throw new VendorFileError(`cannot resolve ${specifier} for ${url}: ${(err as Error).message}`);
    }
    if (!statSync(path, { throwIfNoEntry: false })?.isFile()) throw new VendorFileError(`${path} (served at ${url}) is missing`);
    paths.set(url, path);
  }
  return paths;
}
