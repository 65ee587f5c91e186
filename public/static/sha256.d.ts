// Types of sha256.js for the TypeScript tests.
export declare function sha256(bytes: Uint8Array): Uint8Array;
export declare const fallbackSubtle: { digest(algorithm: string, data: Uint8Array | ArrayBuffer): Promise<ArrayBuffer> };
