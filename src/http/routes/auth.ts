/**
 * Authentication routes (interface 4.6 and 5, addendum A "Magic link", B, C) and the helpers every account route
 * shares: the feature gate (503 `not_ready` without JWT_SECRET), bearer authentication with the revocation check,
 * and JSON body parsing against the schema that documents the body.
 */
import type { z } from "zod";
import {
  AuthError,
  checkMagic,
  checkTelegramLogin,
  hashMagic,
  mintMagic,
  mintSession,
  verifyForLogout,
  verifySession,
  type SessionClaims,
} from "../../auth/index.ts";
import type { Config } from "../../config.ts";
import { timestampToWire } from "../../methodology/index.ts";
import type { UserRecord } from "../../store/index.ts";
import type { AccountsModel } from "../accounts-model.ts";
import { ApiError, type ErrorCode } from "../errors.ts";
import type { ReadModel } from "../read-model.ts";
import { LoginResponse, MagicConsume, MagicLink, MessengerLogin } from "../schemas/index.ts";
import type { HttpRequest, HttpResult } from "../types.ts";
import { jsonResult, type DocumentedRoute } from "./spec.ts";

/** Errors of every bearer-authenticated route. */
export const BEARER_ERRORS: readonly ErrorCode[] = ["unauthorized", "invalid_token", "token_expired", "token_revoked", "not_ready"];
/** Errors of every route that takes a JSON body. */
export const BODY_ERRORS: readonly ErrorCode[] = ["invalid_body", "unsupported_media_type", "payload_too_large"];

/** 503 `not_ready` unless sessions are enabled (JWT_SECRET set); returns the key. */
export function sessionSecret(config: Config): string {
  if (!config.features.auth || config.jwtSecret === null) {
    throw new ApiError("not_ready", "authentication is disabled on this deployment (JWT_SECRET is not set)");
  }
  return config.jwtSecret;
}

const asApiError = (e: unknown): unknown => (e instanceof AuthError ? new ApiError(e.code, e.message) : e);

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The bearer token, or 401 `unauthorized` when there is none. */
function bearerToken(req: HttpRequest): string {
  const m = BEARER.exec(req.headers["authorization"] ?? "");
  if (m === null) throw new ApiError("unauthorized", "this route needs Authorization: Bearer <session token>");
  return m[1]!;
}

export interface Session {
  readonly user: UserRecord;
  readonly claims: SessionClaims;
}

/**
 * The signed-in user of a `/v1/me` request: the token is verified (signature, claims, expiry) and checked against
 * the revocation list on every request; a token for a user that no longer exists is `invalid_token`.
 */
export async function authenticate(rm: ReadModel, accounts: AccountsModel, req: HttpRequest): Promise<Session> {
  const secret = sessionSecret(rm.config);
  const token = bearerToken(req);
  let claims: SessionClaims;
  try {
    claims = await verifySession(token, { secret, now: rm.clock.now(), isRevoked: (jti) => accounts.isRevoked(jti) });
  } catch (e) {
    throw asApiError(e);
  }
  const id = /^[1-9]\d{0,15}$/.test(claims.sub) ? Number(claims.sub) : NaN;
  const user = Number.isSafeInteger(id) ? await accounts.user(id) : undefined;
  if (user === undefined) throw new ApiError("invalid_token", "the session's user does not exist");
  return { user, claims };
}

/**
 * The request's JSON body, validated by `schema` (the one that documents it). 415 when the content type is not JSON;
 * 400 `invalid_body` when it is empty, not JSON, or does not satisfy the schema (unknown keys included).
 */
export function parseJsonBody<T extends z.ZodType>(req: HttpRequest, schema: T): z.output<T> {
  return validate(schema, readJson(req));
}

/**
 * The parsed JSON value of the body (not validated). JSON is UTF-8 (RFC 8259 section 8.1): a `charset` parameter
 * naming anything else is a 415, never a body decoded as UTF-8 regardless.
 */
export function readJson(req: HttpRequest): unknown {
  const [media, ...params] = (req.headers["content-type"] ?? "").split(";");
  const type = media!.trim().toLowerCase();
  if (type !== "application/json") {
    throw new ApiError("unsupported_media_type", `the request body must be application/json${type === "" ? "" : `, not ${type.slice(0, 64)}`}`);
  }
  for (const p of params) {
    const eq = p.indexOf("=");
    if (p.slice(0, eq < 0 ? p.length : eq).trim().toLowerCase() !== "charset") continue;
    const charset = p.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1").toLowerCase();
    if (eq < 0 || (charset !== "utf-8" && charset !== "utf8")) {
      throw new ApiError("unsupported_media_type", `the request body must be UTF-8 JSON, not charset ${JSON.stringify(charset.slice(0, 32))}`);
    }
  }
  if (req.body === null || req.body.length === 0) throw new ApiError("invalid_body", "a JSON body is required");
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(req.body)) as unknown;
  } catch {
    throw new ApiError("invalid_body", "the body is not valid UTF-8 JSON");
  }
}

function validate<T extends z.ZodType>(schema: T, value: unknown): z.output<T> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? "body" : issue.path.join(".");
  throw new ApiError("invalid_body", `${where}: ${issue?.message ?? "invalid"}`);
}

async function loginResponse(rm: ReadModel, user: UserRecord, secret: string): Promise<HttpResult> {
  const session = await mintSession({ secret, userId: user.id, now: rm.clock.now() });
  return jsonResult(
    200,
    {
      token: session.token,
      expires_at: timestampToWire(session.expiresAt),
      user: { telegram_id: user.telegram_id, username: user.username ?? "", locale: user.locale },
    },
    { "cache-control": "no-store" },
  );
}

/** Path of the sign-in page a magic link opens; the token travels in the fragment. */
export const MAGIC_LINK_PATH = "/login";

export function authRoutes(rm: ReadModel, accounts: AccountsModel): DocumentedRoute[] {
  return [
    {
      method: "POST",
      path: "/v1/auth/messenger",
      handler: async (req) => {
        const secret = sessionSecret(rm.config);
        const botToken = rm.config.telegramBotToken;
        if (!rm.config.features.telegramLogin || botToken === null) {
          throw new ApiError("not_ready", "messenger login is disabled on this deployment (TELEGRAM_BOT_TOKEN is not set)");
        }
        const payload = readJson(req);
        let login;
        try {
          login = checkTelegramLogin(payload, { botToken, now: rm.clock.now() });
        } catch (e) {
          throw asApiError(e);
        }
        const user = await accounts.loginTelegram({ telegram_id: login.telegram_id, username: login.username, first_name: login.first_name }, rm.clock.now());
        return loginResponse(rm, user, secret);
      },
      spec: {
        summary: "Sign in with the messenger login widget",
        description:
          "Checks the widget's signed payload (addendum C: HMAC-SHA256 keyed by SHA-256 of the bot token over the sorted `key=value` lines, `auth_date` at most 24 h old) and returns a 7-day session. The user is created on first login. A wrong hash is `invalid_token`, an old `auth_date` `token_expired`. 503 `not_ready` when login is disabled.",
        tags: ["auth"],
        requestBody: { schema: MessengerLogin },
        responses: { 200: LoginResponse },
        errors: ["invalid_token", "token_expired", "not_ready", ...BODY_ERRORS],
      },
    },
    {
      method: "POST",
      path: "/v1/auth/magic/mint",
      handler: async (req) => {
        const { user } = await authenticate(rm, accounts, req);
        const magic = mintMagic(rm.clock.now());
        await accounts.saveMagicLink({ tokenHash: magic.tokenHash, userId: user.id, expiresAt: magic.expiresAt });
        return jsonResult(
          201,
          { token: magic.token, url: `${MAGIC_LINK_PATH}#token=${magic.token}`, expires_at: timestampToWire(magic.expiresAt) },
          { "cache-control": "no-store" },
        );
      },
      spec: {
        summary: "Mint a magic sign-in link",
        description: "A single-use link for the signed-in user (to sign in on another device), valid 10 minutes. No body.",
        tags: ["auth"],
        security: "bearer",
        responses: { 201: MagicLink },
        errors: [...BEARER_ERRORS],
      },
    },
    {
      method: "POST",
      path: "/v1/auth/magic/consume",
      handler: async (req) => {
        const secret = sessionSecret(rm.config);
        const { token } = parseJsonBody(req, MagicConsume);
        const now = rm.clock.now();
        let userId: number | null;
        try {
          const hash = hashMagic(token);
          const stored = await accounts.magicLink(hash);
          checkMagic(stored === undefined ? undefined : { tokenHash: stored.tokenHash, expiresAt: stored.expiresAt, usedAt: stored.usedAt }, now);
          // The decision above is advisory; the conditional update is the lock (two exchanges: one wins).
          userId = await accounts.useMagicLink(hash, now);
        } catch (e) {
          throw asApiError(e);
        }
        if (userId === null) throw new ApiError("invalid_token", "magic link already used");
        const user = await accounts.user(userId);
        if (user === undefined) throw new ApiError("invalid_token", "the link's user does not exist");
        return loginResponse(rm, user, secret);
      },
      spec: {
        summary: "Exchange a magic link for a session",
        description: "Single use: a used, expired or unknown token is `invalid_token`.",
        tags: ["auth"],
        requestBody: { schema: MagicConsume },
        responses: { 200: LoginResponse },
        errors: ["invalid_token", "not_ready", ...BODY_ERRORS],
      },
    },
    {
      method: "POST",
      path: "/v1/auth/logout",
      handler: async (req) => {
        const secret = sessionSecret(rm.config);
        const token = bearerToken(req);
        const now = rm.clock.now();
        let claims: SessionClaims;
        try {
          claims = await verifyForLogout(token, { secret, now });
        } catch (e) {
          throw asApiError(e);
        }
        await accounts.revoke(claims.jti, claims.exp * 1000, now);
        return { status: 204 };
      },
      spec: {
        summary: "Sign out",
        description: "Revokes the session by its `jti`. An expired but authentic token is accepted; logging out twice is not an error. No body.",
        tags: ["auth"],
        security: "bearer",
        responses: { 204: null },
        errors: ["unauthorized", "invalid_token", "not_ready"],
      },
    },
  ];
}
