// SHA-256 for the receipt check where browsers withhold WebCrypto (outside a secure context: a dashboard opened over
// plain http on a non-localhost address): the audited @noble/hashes implementation, served from node_modules at
// /static/vendor/noble-hashes/ and mapped by the page's import map; under Node the same specifier resolves to the
// package. Pure.

import { sha256 } from "@noble/hashes/sha2.js";

export { sha256 };

/** A WebCrypto-shaped digester backed by `sha256`, for `jcs.js`. Only SHA-256. */
export const fallbackSubtle = Object.freeze({
  async digest(algorithm, data) {
    if (algorithm !== "SHA-256") throw new Error(`unsupported digest ${algorithm}`);
    const digest = sha256(data instanceof Uint8Array ? data : new Uint8Array(data));
    return digest.buffer.slice(digest.byteOffset, digest.byteOffset + digest.byteLength);
  },
});
