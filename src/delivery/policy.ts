/** Delivery rules fixed by the interface (6.3, 6.4, part 8) and addendum F, in one place. */

/** Attempts per event, the `6` of `x-svc-attempt: n/6` (interface 6.4). */
export const MAX_ATTEMPTS = 6;

/**
 * Wait before attempt n (index n - 1), in milliseconds: 0 s, 5 s, 30 s, 5 min, 30 min, 2 h; after the sixth failure
 * the delivery is dead-lettered (interface 6.4). A longer `Retry-After` on a 429 replaces the wait (addendum F).
 */
export const RETRY_WAITS_MS: readonly number[] = [0, 5_000, 30_000, 300_000, 1_800_000, 7_200_000];

/** Receivers accept a delivery timestamp within this many seconds of their clock, either way (interface 6.3.4). */
export const TIMESTAMP_TOLERANCE_SECS = 300;

/** Total time budget of one attempt: a 2xx must arrive within it (interface 6.3.3). */
export const DELIVERY_TIMEOUT_MS = 5_000;

/** At most this much of a response body is read (addendum F). */
export const RESPONSE_BODY_LIMIT_BYTES = 64 * 1024;

/** A rotated-out signing key stays `retiring` (listed, still verifying) this long (issue 6). */
export const KEY_RETIRE_MS = 7 * 24 * 3_600_000;
