/**
 * Incremental 1-minute rollups (issue 15): a batch adds only the rows it newly stored to its minutes' rollups instead
 * of recomputing each minute from the raw rows. For that a rollup keeps the exact sum of its discounts (the average is
 * `sum / samples`, PostgreSQL's own `avg(numeric)` division, so the figure is unchanged to the last digit) and the seq
 * of its last row, which with `last_ts` orders rows within a millisecond as the recompute did.
 *
 * Backfill: minutes whose raw rows are still stored get the exact sum and last seq from them; older minutes (raw rows
 * past retention) can never take new rows (the store refuses samples whose minute is past raw retention), so their sum
 * is `avg * samples` for completeness only.
 */
import { sql, type Kysely } from "kysely";

// Migrations must not depend on the app's evolving Database type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("rollups_1m").addColumn("sum_discount", "numeric").execute();
  await db.schema.alterTable("rollups_1m").addColumn("last_seq", "integer").execute();
  await sql`
    update rollups_1m r set sum_discount = s.sum_discount, last_seq = s.last_seq
    from (
      select r2.mint, r2.minute, sum(x.discount) as sum_discount, (array_agg(x.seq order by x.ts desc, x.seq desc))[1] as last_seq
      from rollups_1m r2
      join samples x on x.mint = r2.mint and x.ts >= r2.minute and x.ts < r2.minute + interval '1 minute'
      group by r2.mint, r2.minute
    ) s
    where r.mint = s.mint and r.minute = s.minute
  `.execute(db);
  await sql`update rollups_1m set sum_discount = avg_discount * samples, last_seq = 0 where sum_discount is null`.execute(db);
  await db.schema.alterTable("rollups_1m").alterColumn("sum_discount", (c) => c.setNotNull()).execute();
  await db.schema.alterTable("rollups_1m").alterColumn("last_seq", (c) => c.setNotNull()).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("rollups_1m").dropColumn("last_seq").execute();
  await db.schema.alterTable("rollups_1m").dropColumn("sum_discount").execute();
}
