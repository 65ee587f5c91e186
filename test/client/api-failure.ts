import { ApiError } from "@peg-oracle/client";

/** The ApiError a call fails with (fails the test if it succeeds or throws something else). */
export async function failure(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error("the call succeeded");
}
