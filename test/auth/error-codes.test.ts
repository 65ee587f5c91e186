import { describe, expect, it } from "vitest";
import { AUTH_ERROR_CODES } from "../../src/auth/index.ts";
import { ERROR_STATUS } from "../../src/http/errors.ts";

describe("auth error codes", () => {
  it("are addendum B codes the HTTP layer knows, with their statuses", () => {
    const statuses = Object.fromEntries(Object.values(AUTH_ERROR_CODES).map((code) => [code, ERROR_STATUS[code]]));
    expect(statuses).toEqual({ invalid_token: 401, token_expired: 401, token_revoked: 401, invalid_body: 400 });
  });
});
