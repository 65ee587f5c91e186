/**
 * What every `/v1/me` route shares: the bearer check, lookups scoped to the signed-in user (someone else's resource
 * is a plain 404), the webhook destination check, and the mapping of a repository's write outcome to an ApiError.
 */
import { detectChatHost } from "../../delivery/chat.ts";
import { checkDestination, systemResolve, type Resolve } from "../../delivery/index.ts";
import type { CatalogAsset } from "../../catalog/index.ts";
import type { WebhookFormat, WebhookRecord, WriteResult } from "../../store/index.ts";
import type { AccountsModel } from "../accounts-model.ts";
import type { CursorCodec } from "../cursor.ts";
import { ApiError, assetNotFound, notFound } from "../errors.ts";
import type { ReadModel } from "../read-model.ts";
import { authenticate } from "./auth.ts";

export interface MeRouteOptions {
  /** DNS resolution for the webhook destination check (default: the system resolver). Tests pass a fake. */
  readonly resolve?: Resolve;
  /** Tests only: accept loopback destinations (a receiver on this machine). Default false. */
  readonly allowLoopbackForTests?: boolean;
  /** Destination ports webhook URLs may use besides 443 (WEBHOOK_ALLOWED_PORTS). Default none. */
  readonly allowedPorts?: readonly number[];
}

/** The read model, the accounts and the per-user helpers the `/v1/me` route groups are built on. */
export interface MeContext {
  readonly rm: ReadModel;
  readonly accounts: AccountsModel;
  /** Signs and checks the deliveries listing's `next_before` / `before` (one listing per webhook). */
  readonly cursors: CursorCodec;
  readonly auth: (req: Parameters<typeof authenticate>[2]) => ReturnType<typeof authenticate>;
  /** The catalog entry of a symbol in a path (inactive assets too, so old subscriptions can be changed). */
  readonly knownAsset: (symbol: string) => CatalogAsset;
  /** A webhook URL that passed the destination check, as the check normalised it. */
  readonly checkedUrl: (url: string) => Promise<string>;
  readonly ownWebhook: (userId: number, id: string) => Promise<WebhookRecord>;
}

export function meContext(rm: ReadModel, accounts: AccountsModel, cursors: CursorCodec, opts: MeRouteOptions): MeContext {
  const resolve = opts.resolve ?? systemResolve;
  const auth = (req: Parameters<typeof authenticate>[2]) => authenticate(rm, accounts, req);

  const knownAsset = (symbol: string) => {
    const a = rm.catalog.bySymbol(symbol);
    if (a === undefined) throw assetNotFound(symbol);
    return a;
  };

  const checkedUrl = async (url: string): Promise<string> => {
    const c = await checkDestination(url, {
      resolve,
      allowLoopbackForTests: opts.allowLoopbackForTests === true,
      ...(opts.allowedPorts === undefined ? {} : { allowedPorts: opts.allowedPorts }),
    });
    if (!c.ok) throw new ApiError(c.apiError, `url: ${c.message}`);
    return c.url;
  };

  const ownWebhook = async (userId: number, id: string): Promise<WebhookRecord> => {
    const w = await accounts.webhook(userId, id);
    if (w === undefined) throw notFound("no such webhook");
    return w;
  };

  return { rm, accounts, cursors, auth, knownAsset, checkedUrl, ownWebhook };
}

/** The value of a write, or its refusal as an ApiError. */
export function written<T>(r: WriteResult<T>, what: string, cap: string): T {
  switch (r.kind) {
    case "ok":
      return r.value;
    case "not_found":
      throw notFound(`no such ${what}`);
    case "conflict":
      throw new ApiError("conflict", r.reason === "limit" ? `at most ${cap} per user` : `an active ${what} for this asset already exists; PATCH or DELETE it`);
  }
}

/** A chat service gets an unsigned chat message (it cannot verify our signature); any other host signed JSON. */
export const formatFor = (url: string): WebhookFormat => (detectChatHost(url) === null ? "signed" : "chat");

type Defined<T> = { [K in keyof T]?: Exclude<T[K], undefined> };

/** A parsed patch without its absent members (zod types them `T | undefined`; the repositories take `T?`). */
export function defined<T extends object>(o: T): Defined<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Defined<T>;
}

export const PRIVATE = { "cache-control": "no-store" } as const;

export const BEARER = { tags: ["me"], security: "bearer" } as const;
