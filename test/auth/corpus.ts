/**
 * The session-JWT attack corpus: hand-forged tokens (see forge.ts) and the code `verifySession` must answer for each,
 * at NOW with the key SECRET and nothing revoked. Shared by the unit test (test/auth/jwt.test.ts) and the route test
 * (test/http/auth-corpus.test.ts), which sends every case through the real HTTP routes.
 */
import { generateKeyPairSync, sign as signWith } from "node:crypto";
import { SESSION_AUDIENCE, SESSION_ISSUER } from "../../src/auth/index.ts";
import { DAY_S, GOOD_JTI, NOW_S, OTHER_SECRET, PINNED_HEADER, SECRET, b64, b64json, claimsAt, forge, hmac, signSegments } from "./forge.ts";

/** A valid session at NOW for the user `claimsAt().sub`, jti GOOD_JTI. */
export const valid = forge(claimsAt());
export const [validHeader, validPayload, validSignature] = valid.split(".") as [string, string, string];
export const signingInput = `${PINNED_HEADER}.${validPayload}`;
const without = (key: string): Record<string, unknown> => Object.fromEntries(Object.entries(claimsAt()).filter(([k]) => k !== key));

const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
const rsaPublicPem = rsa.publicKey.export({ type: "spki", format: "pem" }).toString();

function withHeader(header: unknown, signature: (input: string) => string): string {
  const input = `${b64json(header)}.${validPayload}`;
  return `${input}.${signature(input)}`;
}

/** The signature with its last character swapped for one that differs only in the unused low bits. */
export function nonCanonicalSignature(): { token: string; sameBytes: boolean } {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const last = validSignature.at(-1) ?? "";
  const alt = alphabet[alphabet.indexOf(last) ^ 1] ?? "";
  const altSignature = validSignature.slice(0, -1) + alt;
  const sameBytes = Buffer.from(altSignature, "base64url").equals(Buffer.from(validSignature, "base64url"));
  return { token: `${signingInput}.${altSignature}`, sameBytes };
}

/** A valid token whose signature contains `-` or `_`, re-spelled in standard base64 (`+`, `/`). */
function standardBase64Signature(): string {
  for (let i = 0; ; i++) {
    const token = forge({ ...claimsAt(), jti: `${GOOD_JTI}${i}` });
    const signature = token.split(".")[2] ?? "";
    if (/[-_]/.test(signature)) return token.replace(/\.[^.]+$/, `.${signature.replaceAll("-", "+").replaceAll("_", "/")}`);
  }
}

/** Valid claims spelled in standard base64 with at least one `+`, `/` or `=` (so not also base64url). */
function standardBase64Payload(): string {
  for (let i = 0; ; i++) {
    const text = Buffer.from(JSON.stringify({ ...claimsAt(), sub: `${42 + i}?>` })).toString("base64");
    if (/[+/=]/.test(text)) return text;
  }
}

export type Expect = "accepted" | "invalid_token" | "token_expired" | "token_revoked";
/** [name, token, code from verifySession]; logout expects the same except that expired and revoked are accepted. */
export const attacks: ReadonlyArray<readonly [string, unknown, Expect]> = [
  ["a valid token", valid, "accepted"],

  // Header: the algorithm is pinned.
  ["alg none, empty signature", `${b64json({ alg: "none", typ: "JWT" })}.${validPayload}.`, "invalid_token"],
  ["alg none, no signature segment", `${b64json({ alg: "none", typ: "JWT" })}.${validPayload}`, "invalid_token"],
  ["alg none with a valid HMAC signature", forge(claimsAt(), { header: { alg: "none", typ: "JWT" } }), "invalid_token"],
  ["alg None", forge(claimsAt(), { header: { alg: "None", typ: "JWT" } }), "invalid_token"],
  ["alg NONE, empty signature", `${b64json({ alg: "NONE", typ: "JWT" })}.${validPayload}.`, "invalid_token"],
  ["alg RS256, real RSA signature", withHeader({ alg: "RS256", typ: "JWT" }, (i) => signWith("sha256", Buffer.from(i), rsa.privateKey).toString("base64url")), "invalid_token"],
  ["alg RS256, HMAC keyed by the RSA public key (confusion)", withHeader({ alg: "RS256", typ: "JWT" }, (i) => hmac(i, rsaPublicPem)), "invalid_token"],
  ["alg RS256, HMAC keyed by the real secret", withHeader({ alg: "RS256", typ: "JWT" }, (i) => hmac(i, SECRET)), "invalid_token"],
  ["alg ES256, real ECDSA signature", withHeader({ alg: "ES256", typ: "JWT" }, (i) => signWith("sha256", Buffer.from(i), { key: ec.privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url")), "invalid_token"],
  ["alg ES256, HMAC keyed by the real secret", withHeader({ alg: "ES256", typ: "JWT" }, (i) => hmac(i, SECRET)), "invalid_token"],
  ["alg HS512 with the real secret", forge(claimsAt(), { header: { alg: "HS512", typ: "JWT" }, hash: "sha512" }), "invalid_token"],
  ["alg HS384 with the real secret", forge(claimsAt(), { header: { alg: "HS384", typ: "JWT" }, hash: "sha384" }), "invalid_token"],
  ["alg lower-case hs256", forge(claimsAt(), { header: { alg: "hs256", typ: "JWT" } }), "invalid_token"],
  ["typ missing", forge(claimsAt(), { header: { alg: "HS256" } }), "invalid_token"],
  ["typ at+jwt", forge(claimsAt(), { header: { alg: "HS256", typ: "at+jwt" } }), "invalid_token"],
  ["typ lower-case jwt", forge(claimsAt(), { header: { alg: "HS256", typ: "jwt" } }), "invalid_token"],
  ["extra kid header", forge(claimsAt(), { header: { alg: "HS256", typ: "JWT", kid: "1" } }), "invalid_token"],
  ["extra jku header", forge(claimsAt(), { header: { alg: "HS256", typ: "JWT", jku: "https://evil.example/jwks" } }), "invalid_token"],
  ["crit header", forge(claimsAt(), { header: { alg: "HS256", typ: "JWT", crit: ["b64"], b64: false } }), "invalid_token"],
  ["header keys reordered (not the pinned bytes)", forge(claimsAt(), { header: { typ: "JWT", alg: "HS256" } }), "invalid_token"],
  ["duplicate alg keys", signSegments(b64('{"alg":"none","alg":"HS256","typ":"JWT"}'), validPayload), "invalid_token"],
  ["header is an array", forge(claimsAt(), { header: ["HS256", "JWT"] }), "invalid_token"],
  ["header is not JSON", signSegments(b64("HS256"), validPayload), "invalid_token"],

  // Key and signature.
  ["signed with another secret", forge(claimsAt(), { secret: OTHER_SECRET }), "invalid_token"],
  ["expired and signed with another secret", forge({ ...claimsAt(NOW_S - 30 * DAY_S) }, { secret: OTHER_SECRET }), "invalid_token"],
  ["tampered payload, original signature", `${validHeader}.${b64json({ ...claimsAt(), sub: "1" })}.${validSignature}`, "invalid_token"],
  ["tampered header, original signature", `${b64json({ alg: "HS256", typ: "JWT", x: 1 })}.${validPayload}.${validSignature}`, "invalid_token"],
  ["signature bit flipped", `${signingInput}.${validSignature.slice(0, 5)}${validSignature[5] === "A" ? "B" : "A"}${validSignature.slice(6)}`, "invalid_token"],
  ["a 64-byte HMAC-SHA-512 signature under the pinned header", forge(claimsAt(), { hash: "sha512" }), "invalid_token"],
  ["signature non-canonical in its unused bits", nonCanonicalSignature().token, "invalid_token"],
  ["signature padded with =", `${valid}=`, "invalid_token"],
  ["signature in standard base64", standardBase64Signature(), "invalid_token"],

  // Shape.
  ["truncated by one character", valid.slice(0, -1), "invalid_token"],
  ["truncated to the first two segments", `${validHeader}.${validPayload}`, "invalid_token"],
  ["truncated mid-payload", valid.slice(0, validHeader.length + 10), "invalid_token"],
  ["an extra segment", `${valid}.${validSignature}`, "invalid_token"],
  ["a trailing dot", `${valid}.`, "invalid_token"],
  ["empty string", "", "invalid_token"],
  ["only dots", "..", "invalid_token"],
  ["empty header segment", `.${validPayload}.${validSignature}`, "invalid_token"],
  ["empty payload segment", signSegments(PINNED_HEADER, ""), "invalid_token"],
  ["empty signature segment", `${signingInput}.`, "invalid_token"],
  ["payload is not JSON", signSegments(PINNED_HEADER, b64("not json")), "invalid_token"],
  ["payload is a JSON array", signSegments(PINNED_HEADER, b64json([claimsAt()])), "invalid_token"],
  ["payload is JSON null", signSegments(PINNED_HEADER, b64("null")), "invalid_token"],
  ["payload is invalid UTF-8", signSegments(PINNED_HEADER, b64(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]))), "invalid_token"],
  ["payload has characters outside base64url", signSegments(PINNED_HEADER, `${validPayload.slice(0, 8)}*${validPayload.slice(9)}`), "invalid_token"],
  ["payload in standard base64 (+, /, =)", signSegments(PINNED_HEADER, standardBase64Payload()), "invalid_token"],
  ["token with whitespace", ` ${valid}`, "invalid_token"],
  ["Bearer prefix left in", `Bearer ${valid}`, "invalid_token"],
  ["longer than 2048 characters", forge({ ...claimsAt(), pad: "x".repeat(2000) }), "invalid_token"],
  ["not a string (number)", 42, "invalid_token"],
  ["not a string (undefined)", undefined, "invalid_token"],

  // Time.
  ["expired a day ago", forge(claimsAt(NOW_S - 8 * DAY_S)), "token_expired"],
  ["expires exactly now", forge({ ...claimsAt(NOW_S - 7 * DAY_S) }), "token_expired"],
  ["expires one second from now", forge({ ...claimsAt(NOW_S - 7 * DAY_S + 1) }), "accepted"],
  ["issued 61 s in the future", forge(claimsAt(NOW_S + 61)), "invalid_token"],
  ["issued a day in the future", forge(claimsAt(NOW_S + DAY_S)), "invalid_token"],
  ["issued 60 s in the future (within skew)", forge(claimsAt(NOW_S + 60)), "accepted"],
  ["exp further than 7 days after iat", forge({ ...claimsAt(), exp: NOW_S + 7 * DAY_S + 1 }), "invalid_token"],
  ["exp equal to iat", forge({ ...claimsAt(), exp: NOW_S }), "invalid_token"],
  ["exp before iat", forge({ ...claimsAt(), exp: NOW_S - 1 }), "invalid_token"],
  ["exp as a string", forge({ ...claimsAt(), exp: String(NOW_S + DAY_S) }), "invalid_token"],
  ["exp as a fraction", forge({ ...claimsAt(), exp: NOW_S + DAY_S + 0.5 }), "invalid_token"],
  ["exp null", forge({ ...claimsAt(), exp: null }), "invalid_token"],
  ["exp negative", forge({ ...claimsAt(), iat: -10, exp: -5 }), "invalid_token"],
  ["iat as a string", forge({ ...claimsAt(), iat: String(NOW_S) }), "invalid_token"],

  // Claims.
  ...(["iss", "aud", "sub", "jti", "iat", "exp"] as const).map(
    (claim) => [`missing ${claim}`, forge(without(claim)), "invalid_token"] as const,
  ),
  ["empty claims object", forge({}), "invalid_token"],
  ["wrong iss", forge({ ...claimsAt(), iss: "someone-else" }), "invalid_token"],
  ["iss differs in case", forge({ ...claimsAt(), iss: SESSION_ISSUER.toUpperCase() }), "invalid_token"],
  ["wrong aud", forge({ ...claimsAt(), aud: "another-api" }), "invalid_token"],
  ["aud as an array", forge({ ...claimsAt(), aud: [SESSION_AUDIENCE] }), "invalid_token"],
  ["sub as a number", forge({ ...claimsAt(), sub: 42 }), "invalid_token"],
  ["sub empty", forge({ ...claimsAt(), sub: "" }), "invalid_token"],
  ["sub with a newline", forge({ ...claimsAt(), sub: "42\n43" }), "invalid_token"],
  ["jti too short", forge({ ...claimsAt(), jti: "abc" }), "invalid_token"],
  ["jti not a string", forge({ ...claimsAt(), jti: 1234567890123456 }), "invalid_token"],
  ["jti with characters outside base64url", forge({ ...claimsAt(), jti: "AAAAAAAAAAAAAAAA/AAAAA" }), "invalid_token"],
];
