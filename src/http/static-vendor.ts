/**
 * The npm packages the dashboard runs in the browser, served as they are from node_modules (no build step, nothing
 * from a CDN): `canonicalize` (RFC 8785, the JCS the server hashes receipts with) and the SHA-256 of `@noble/hashes`
 * (used where browsers withhold WebCrypto). Only the files listed here are served, each at a fixed URL under
 * /static/vendor/: the module a page imports and the relative imports it pulls in. The pages map the bare specifiers
 * to these URLs with an import map (public/receipt.html), so the same modules import unchanged under Node.
 */
import { statSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The allow-list: URL path, the package specifier Node resolves (through the package's `exports`), and the file
 * relative to that resolved module (`@noble/hashes` does not export `_u64.js`, which `sha2.js` imports).
 */
export const VENDOR_FILES: ReadonlyArray<readonly [url: string, specifier: string, file: string]> = [
  ["/static/vendor/canonicalize.js", "canonicalize", "./canonicalize.js"],
  ["/static/vendor/noble-hashes/sha2.js", "@noble/hashes/sha2.js", "./sha2.js"],
  ["/static/vendor/noble-hashes/_md.js", "@noble/hashes/sha2.js", "./_md.js"],
  ["/static/vendor/noble-hashes/_u64.js", "@noble/hashes/sha2.js", "./_u64.js"],
  ["/static/vendor/noble-hashes/utils.js", "@noble/hashes/sha2.js", "./utils.js"],
];

/** Why a vendored file is missing: the dashboard's receipt check would break, so the service does not start. */
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
