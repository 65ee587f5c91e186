/**
 * A paid answer is never lost (issue 24): once a payment is settled the service owes that request its answer, across
 * crashes and restarts. The ledger row keeps what it needs to pay that debt and to finish a settlement a crash cut
 * short:
 *
 * - `request`: the SHA-256 of the request the payment bought (tool and arguments, or route and query); the same
 *   payment presented again for the same request gets `answer` back, for any other request it is `reused`;
 * - `answer`: the answer, stored before the settlement is sent (status `settling`), so a settlement that lands while
 *   the process dies still has its answer; cleared after the answer window;
 * - `payload` and `requirements`: the payment as verified, to settle it again or look it up on chain at start;
 * - `settlement`: the SettleResponse given out, sent again with the owed answer;
 * - `holder`: the process instance that holds a `claimed` or `settling` row (another instance's stale rows are
 *   reconciled; this one's are in flight).
 */
import { sql, type Kysely } from "kysely";

// Migrations must not depend on the app's evolving Database type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("x402_payments")
    .addColumn("request", "text")
    .addColumn("answer", "text")
    .addColumn("payload", "text")
    .addColumn("requirements", "text")
    .addColumn("settlement", "text")
    .addColumn("holder", "text")
    .execute();
  // The start-up and periodic passes look for unfinished rows, and for answers past their window.
  await sql`create index x402_payments_open on x402_payments (updated_at) where status in ('claimed', 'settling')`.execute(db);
  await sql`create index x402_payments_answered on x402_payments (created_at) where answer is not null`.execute(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists x402_payments_answered`.execute(db);
  await sql`drop index if exists x402_payments_open`.execute(db);
  await db.schema.alterTable("x402_payments").dropColumn("holder").dropColumn("settlement").dropColumn("requirements").dropColumn("payload").dropColumn("answer").dropColumn("request").execute();
}
