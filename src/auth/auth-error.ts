/**
 * The errors of the authentication primitives. Every refusal is an `AuthError` whose `code` is one of the addendum B
 * codes (a subset of the HTTP layer's `ErrorCode`, so a route rethrows it as `new ApiError(err.code, err.message)`
 * without a mapping table). The module does not import `src/http`: auth sits below it in the layering.
 */

/**
 * Addendum B: `invalid_token` (401: bad signature, wrong alg/iss/aud, malformed), `token_expired` (401),
 * `token_revoked` (401), `invalid_body` (400: schema-invalid input, used for a login-widget payload of the wrong shape).
 */
export const AUTH_ERROR_CODES = {
  invalid_token: "invalid_token",
  token_expired: "token_expired",
  token_revoked: "token_revoked",
  invalid_body: "invalid_body",
} as const;

export type AuthErrorCode = (typeof AUTH_ERROR_CODES)[keyof typeof AUTH_ERROR_CODES];

/**
 * A refused credential. `message` is for logs and humans (never branch on it, interface 2.6) and never contains the
 * secret or the expected signature.
 */
export class AuthError extends Error {
  override readonly name = "AuthError";
  constructor(
    readonly code: AuthErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A session key too short for HS256 (addendum C: "secret >= 32 bytes, refuse to start with a shorter one"). A
 * configuration error, not a request error: it means the service must not run, so it is not an `AuthError`.
 */
export class SessionSecretError extends Error {
  override readonly name = "SessionSecretError";
  readonly code = "invalid_config";
}

export const invalidToken = (message: string): AuthError => new AuthError("invalid_token", message);
