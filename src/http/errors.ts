/**
 * The one error type of the HTTP layer and its codes (addendum B). Handlers throw `ApiError`; the adapter renders
 * every failure, including unexpected ones (`internal`), as the ApiError JSON shape `{error, message, asset?}`.
 */
export const ERROR_STATUS = {
  invalid_query: 400,
  invalid_state: 400,
  invalid_body: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  invalid_token: 401,
  token_expired: 401,
  token_revoked: 401,
  not_found: 404,
  asset_not_found: 404,
  not_applicable: 404,
  not_committed_yet: 404,
  retry_exhausted: 404,
  wallet_drained: 404,
  persistence_failed: 404,
  method_not_allowed: 405,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  upgrade_required: 426,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  not_ready: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/** The JSON body of every error response (interface 2.6). `asset` only for asset-scoped errors. */
export interface ApiErrorBody {
  readonly error: ErrorCode;
  readonly message: string;
  readonly asset?: string;
  /** Extra members some errors carry (e.g. `commit_status` on the on-chain lookup). */
  readonly [extra: string]: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: { readonly asset?: string; readonly headers?: Readonly<Record<string, string>>; readonly body?: Readonly<Record<string, unknown>> } = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.status = ERROR_STATUS[code];
  }

  toBody(): ApiErrorBody {
    return {
      ...(this.extra.body ?? {}),
      error: this.code,
      message: this.message,
      ...(this.extra.asset === undefined ? {} : { asset: this.extra.asset }),
    };
  }
}

export const invalidQuery = (message: string) => new ApiError("invalid_query", message);
export const notFound = (message = "no such resource") => new ApiError("not_found", message);
export const assetNotFound = (symbol: string) => new ApiError("asset_not_found", `no tracked asset "${symbol}"`, { asset: symbol });
