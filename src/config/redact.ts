/** How settings appear in errors and logs (never a secret, never URL credentials) and how the result is frozen. */
import type { ConfigVariable } from "./kinds.ts";

/** The variables whose values are URLs: shown with credentials and query strings masked. */
const URL_VARIABLES = new Set<string>([
  "DATABASE_URL", "NATS_URL", "PYTH_HERMES_URL", "JUPITER_API_URL", "SANCTUM_API_URL", "SOLANA_RPC_URL", "X402_FACILITATOR_URL",
]);
/** Longest value an issue shows. */
const MAX_SHOWN = 120;

/** How a received value appears in an issue: never a secret, never URL credentials or query strings (API keys). */
export function shown(variable: ConfigVariable, value: string): string {
  if (variable.secret) return "[redacted]";
  const safe = URL_VARIABLES.has(variable.name) ? redactUrlText(value) : value;
  const cut = safe.length > MAX_SHOWN ? `${safe.slice(0, MAX_SHOWN)}…` : safe;
  return JSON.stringify(cut);
}

/** Masks `user:password@` and query strings in URL-like text, which is where RPC and database credentials live. */
export function redactUrlText(text: string): string {
  return text.replace(/\/\/[^/?#,\s]*@/g, "//***@").replace(/\?[^,#\s]*/g, "?***");
}

/** Freezes the configuration and everything in it. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}
