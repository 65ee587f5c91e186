// Types of api.js for the TypeScript tests.
export declare class ApiError extends Error {
  constructor(status: number, code: string, message: string);
  readonly status: number;
  readonly code: string;
}
export interface FetchLike {
  (input: string, init?: unknown): Promise<{
    readonly status: number;
    readonly statusText?: string;
    readonly headers: { get(name: string): string | null };
    text(): Promise<string>;
  }>;
}
export declare function retryAfterSecs(value: string | null | undefined, fallback?: number): number;
export declare function getJson(path: string, options?: { fetchImpl?: FetchLike; signal?: unknown }): Promise<{ status: number; body: unknown; retryAfter: number }>;
export declare function errorText(e: unknown): string;
