/**
 * Authentication primitives (interface 4.6 and 5, addendum B and C): session JWTs, the messenger login-widget check
 * and magic-link tokens. Pure functions over injected time (epoch milliseconds); no HTTP, no store.
 */
export { AUTH_ERROR_CODES, AuthError, SessionSecretError, type AuthErrorCode } from "./auth-error.ts";
export {
  CLOCK_SKEW_SECONDS,
  MAX_TOKEN_LENGTH,
  MIN_SECRET_BYTES,
  SESSION_AUDIENCE,
  SESSION_ISSUER,
  SESSION_TTL_SECONDS,
  mintSession,
  sessionSecretBytes,
  verifyForLogout,
  verifySession,
  type MintSessionInput,
  type MintedSession,
  type SessionClaims,
  type SessionKey,
  type VerifyForLogoutOptions,
  type VerifySessionOptions,
} from "./jwt.ts";
export {
  LOGIN_MAX_AGE_SECONDS,
  LOGIN_MAX_FIELDS,
  LOGIN_MAX_FUTURE_SECONDS,
  LOGIN_MAX_VALUE_LENGTH,
  checkTelegramLogin,
  dataCheckString,
  type TelegramLoginOptions,
  type TelegramLoginUser,
} from "./telegram-login.ts";
export {
  MAGIC_TOKEN_BYTES,
  MAGIC_TTL_MS,
  checkMagic,
  consumeMagic,
  hashMagic,
  mintMagic,
  type MagicRecord,
  type MintedMagic,
} from "./magic.ts";
