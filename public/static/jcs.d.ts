// Types of jcs.js for the TypeScript tests.
export interface Digester {
  digest(algorithm: string, data: Uint8Array): Promise<ArrayBuffer>;
}
export declare function canonicalize(value: unknown): string;
export declare function utf8(s: string): Uint8Array;
export declare function receiptPreimage(methodologyVersion: string, gitSha: string, catalogEntry: unknown, inputsFrozen: unknown, computed: unknown): Uint8Array;
export declare function toHex(bytes: ArrayBuffer | Uint8Array): string;
export declare function sha256Hex(bytes: Uint8Array, subtle?: Digester): Promise<string>;
export declare function receiptHash(methodologyVersion: string, gitSha: string, catalogEntry: unknown, inputsFrozen: unknown, computed: unknown, subtle?: Digester): Promise<string>;
export declare function verifyReceipt(
  detail: {
    readonly methodology_version: string;
    readonly git_sha?: string | null;
    readonly catalog_entry: unknown;
    readonly inputs_frozen: unknown;
    readonly computed: unknown;
    readonly receipt_sha256?: string | null;
  },
  subtle?: Digester,
): Promise<{ ok: boolean; expected: string | null; actual: string }>;
