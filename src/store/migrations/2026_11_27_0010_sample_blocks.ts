/**
 * Packed minutes as one `bytea` each (issue 25): `sample_minutes` keeps one row per (asset, minute), partitioned by UTC
 * day, but its seven parallel arrays (decimals as `numeric`, ~79-90 B a sample) become one `block` encoded by the service
 * (sample-block.ts: varint offsets, seq and state in a byte, decimals as scale + mantissa bytes or a repeat, ~45 B).
 * `block` is stored EXTERNAL: a block larger than ~2 kB (a minute of 1 Hz samples) goes to TOAST without a pointless
 * compression attempt (the mantissas do not compress), and smaller ones stay in the row.
 *
 * SQL reads blocks only where a query needs it: `sample_block_keys(block)` (offsets and seqs, for the insert's check of
 * a late sample against the packed ones) and `sample_block_rows(block)` (every column, for the `samples` view that tools
 * use). Both are PL/pgSQL and slow next to the service's decoder; the service's reads decode in the service.
 *
 * The previous rows are converted by the service in pages of (asset, minute) into a side table, then the old table is
 * dropped and the rows moved into the new day partitions: nothing inside the retention window is lost.
 *
 * Rollups of closed days (issue 25: 171 B a row, target 100): `rollup_days` holds one row per (asset, UTC day) with the
 * day's minutes as parallel arrays (minute of the day, samples, last ms and seq and state, sum, min, max, and the stored
 * average of migrated rollups when any), partitioned by day, so a row's ~250 B of header, keys and index is shared by
 * up to 1,440 minutes. The decimals stay `numeric` (SQL sums and divides them: the average is `sum / samples` with
 * PostgreSQL's division, to the last digit). `sample_pack_state.rollups_packed_until`: no minute at or after it is
 * packed; a late sample's rollup for a minute before it is merged into its day's arrays by `rollup_days_merge`, so a
 * minute is always in exactly one place. The `rollups_1m` view reads both.
 */
import { sql, type Kysely, type RawBuilder } from "kysely";
import { blockHex, encodeBlock, type BlockSample } from "../sample-block.ts";

const DAY_MS = 86_400_000;
const PAGE = 2000;
const ts = sql`timestamptz(3)`;

// Migrations must not depend on the app's evolving Database type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Db = Kysely<any>;

const dayLabel = (ms: number): string => new Date(ms).toISOString().slice(0, 10).replaceAll("-", "");

/** Unsigned LEB128 at `p` of `b` (the statements of one varint read, inlined where speed matters). */
const VARINT = `v := 0; mul := 1;
    loop x := get_byte(b, p); p := p + 1; v := v + (x & 127) * mul; exit when x < 128; mul := mul * 128; end loop;`;

async function createDecoders(db: Db): Promise<void> {
  await sql
    .raw(`create function sample_block_keys(b bytea) returns table (off integer, seq integer)
  language plpgsql immutable strict parallel safe as $$
  declare p integer := 3; n integer; v bigint; x integer; mul bigint; o integer := 0; offs integer[];
  begin
    if get_byte(b, 0) <> 1 then raise exception 'packed minute of unknown version %', get_byte(b, 0); end if;
    ${VARINT}
    n := v;
    offs := array_fill(0, array[n]);
    for i in 1..n loop
      ${VARINT}
      o := o + v; offs[i] := o;
    end loop;
    for i in 1..n loop
      ${VARINT}
      off := offs[i]; seq := v / 8; return next;
    end loop;
  end $$`)
    .execute(db);
  await sql
    .raw(`create function sample_block_varint(b bytea, inout p integer, out v bigint)
  language plpgsql immutable strict parallel safe as $$
  declare x integer; mul bigint;
  begin ${VARINT} end $$`)
    .execute(db);
  // One column of n decimals (decimal-bytes.ts): a repeat, a value, or a delta to the previous value.
  await sql
    .raw(`create function sample_block_decimals(b bytea, inout p integer, n integer, out vals numeric[])
  language plpgsql immutable strict parallel safe as $$
  declare k bigint; z bigint; s integer; m numeric; t text; val numeric; prev numeric;
  begin
    vals := '{}';
    for i in 1..n loop
      select * into p, k from sample_block_varint(b, p);
      if k = 0 then
        val := prev;
      else
        s := (k - 1) / 2;
        select * into p, z from sample_block_varint(b, p);
        m := 0;
        for j in 1..(z / 2) loop m := m * 256 + get_byte(b, p); p := p + 1; end loop;
        t := m::text;
        if s > 0 then
          -- lpad also truncates: only widen a mantissa shorter than its scale.
          if length(t) <= s then t := lpad(t, s + 1, '0'); end if;
          t := left(t, length(t) - s) || '.' || right(t, s);
        end if;
        val := t::numeric;
        if z % 2 = 1 then val := -val; end if;
        if (k - 1) % 2 = 1 then val := prev + val; end if;
        val := trim_scale(val);
      end if;
      vals := vals || val;
      prev := val;
    end loop;
  end $$`)
    .execute(db);
  await sql
    .raw(`create function sample_block_rows(b bytea) returns table (
    off integer, seq integer, state smallint, discount numeric, discount_raw numeric, market_usd numeric, intrinsic_usd numeric)
  language plpgsql immutable strict parallel safe as $$
  declare p integer := 3; n bigint; v bigint; o integer := 0; offs integer[] := '{}'; keys bigint[] := '{}';
    c0 numeric[]; c1 numeric[]; c2 numeric[]; c3 numeric[];
  begin
    if get_byte(b, 0) <> 1 then raise exception 'packed minute of unknown version %', get_byte(b, 0); end if;
    select * into p, n from sample_block_varint(b, p);
    for i in 1..n loop select * into p, v from sample_block_varint(b, p); o := o + v; offs := offs || o; end loop;
    for i in 1..n loop select * into p, v from sample_block_varint(b, p); keys := keys || v; end loop;
    select * into p, c0 from sample_block_decimals(b, p, n::integer);
    select * into p, c1 from sample_block_decimals(b, p, n::integer);
    select * into p, c2 from sample_block_decimals(b, p, n::integer);
    select * into p, c3 from sample_block_decimals(b, p, n::integer);
    return query select u.o, (u.k / 8)::integer, (u.k % 8)::smallint, u.d0, u.d1, u.d2, u.d3
      from unnest(offs, keys, c0, c1, c2, c3) as u (o, k, d0, d1, d2, d3);
  end $$`)
    .execute(db);
}

interface OldRow {
  asset: number;
  ms: string | number;
  offsets: number[];
  seqs: number[];
  states: number[];
  discount: string[];
  discount_raw: string[];
  market_usd: string[];
  intrinsic_usd: string[];
}

/** Every 0009 packed row re-encoded into `sample_minutes_0010`, a page of (asset, minute) at a time. */
async function convertRows(db: Db): Promise<void> {
  await sql`create table sample_minutes_0010 (asset integer not null, minute ${ts} not null, n integer not null, block bytea not null)`.execute(db);
  let after: { asset: number; minute: string } | null = null;
  for (;;) {
    const cond: RawBuilder<unknown> = after === null ? sql`true` : sql`(asset, minute) > (${after.asset}, ${after.minute}::timestamptz)`;
    const res: { rows: OldRow[] } = await sql<OldRow>`
      select asset, (extract(epoch from minute) * 1000)::bigint as ms, offsets, seqs, states, discount::text[] as discount,
             discount_raw::text[] as discount_raw, market_usd::text[] as market_usd, intrinsic_usd::text[] as intrinsic_usd
      from sample_minutes where ${cond} order by asset, minute limit ${PAGE}`.execute(db);
    const rows = res.rows;
    if (rows.length === 0) return;
    const blocks = rows.map((r) => {
      const samples: BlockSample[] = r.offsets.map((off, i) => ({
        off,
        seq: r.seqs[i]!,
        state: r.states[i]!,
        discount: r.discount[i]!,
        discount_raw: r.discount_raw[i]!,
        market_usd: r.market_usd[i]!,
        intrinsic_usd: r.intrinsic_usd[i]!,
      }));
      return blockHex(encodeBlock(samples));
    });
    const minutes = rows.map((r) => new Date(Number(r.ms)).toISOString());
    await sql`
      insert into sample_minutes_0010 (asset, minute, n, block)
      select a, m, n, decode(h, 'hex')
      from unnest(${rows.map((r) => r.asset)}::integer[], ${minutes}::timestamptz[], ${rows.map((r) => r.offsets.length)}::integer[],
                  ${blocks}::text[]) as t (a, m, n, h)`.execute(db);
    const last: OldRow = rows[rows.length - 1]!;
    after = { asset: last.asset, minute: minutes[minutes.length - 1]! };
  }
}

async function createRollupDays(db: Db): Promise<void> {
  await sql`create table rollup_days (
    asset integer not null, day ${ts} not null, n integer not null,
    minutes smallint[] not null, samples integer[] not null, last_ms integer[] not null, last_seq integer[] not null,
    last_state smallint[] not null, sum_discount numeric[] not null, min_discount numeric[] not null,
    max_discount numeric[] not null, avg_discount numeric[],
    primary key (asset, day)
  ) partition by range (day)`.execute(db);
  await sql`alter table sample_pack_state add column rollups_packed_until ${ts} not null default '1970-01-01T00:00:00Z'`.execute(db);
  // One minute's rollup added to its packed day, as the insert's upsert adds to a rollup_minutes row: sums and counts
  // add, min and max widen, the last state is the one of the greater (ms, seq), a stored average is dropped. A minute
  // the day does not hold yet is inserted in minute order.
  await sql
    .raw(`create function rollup_days_merge(a integer, d timestamptz, m smallint, k integer, s numeric, lo numeric, hi numeric,
    lms integer, lseq integer, lstate smallint) returns void language plpgsql as $$
  declare i integer;
  begin
    loop
      select array_position(minutes, m) into i from rollup_days where asset = a and day = d for update;
      exit when found;
      -- No row for the day yet: insert one, unless a concurrent merge just did (then lock and merge into that one).
      insert into rollup_days (asset, day, n, minutes, samples, last_ms, last_seq, last_state, sum_discount, min_discount, max_discount)
      values (a, d, 1, array[m], array[k], array[lms], array[lseq], array[lstate], array[s], array[lo], array[hi])
      on conflict (asset, day) do nothing;
      if found then return; end if;
    end loop;
    if i is not null then
      update rollup_days set
        samples[i] = samples[i] + k,
        sum_discount[i] = sum_discount[i] + s,
        min_discount[i] = least(min_discount[i], lo),
        max_discount[i] = greatest(max_discount[i], hi),
        avg_discount = case when avg_discount is null then null else avg_discount[:i - 1] || null::numeric || avg_discount[i + 1:] end,
        last_state[i] = case when (lms, lseq) > (last_ms[i], last_seq[i]) then lstate else last_state[i] end,
        last_seq[i] = case when (lms, lseq) > (last_ms[i], last_seq[i]) then lseq else last_seq[i] end,
        last_ms[i] = greatest(last_ms[i], lms)
      where asset = a and day = d;
    else
      update rollup_days r set n = r.n + 1, minutes = x.minutes, samples = x.samples, last_ms = x.last_ms, last_seq = x.last_seq,
        last_state = x.last_state, sum_discount = x.sum_discount, min_discount = x.min_discount, max_discount = x.max_discount,
        avg_discount = case when r.avg_discount is null then null else x.avg_discount end
      from (
        select array_agg(u.m order by u.m) as minutes, array_agg(u.k order by u.m) as samples, array_agg(u.lms order by u.m) as last_ms,
               array_agg(u.lseq order by u.m) as last_seq, array_agg(u.lstate order by u.m) as last_state,
               array_agg(u.s order by u.m) as sum_discount, array_agg(u.lo order by u.m) as min_discount,
               array_agg(u.hi order by u.m) as max_discount, array_agg(u.av order by u.m) as avg_discount
        from (
          select t.m, t.k, t.lms, t.lseq, t.lstate, t.s, t.lo, t.hi, t.av
          from rollup_days o cross join lateral unnest(o.minutes, o.samples, o.last_ms, o.last_seq, o.last_state,
            o.sum_discount, o.min_discount, o.max_discount, o.avg_discount) as t (m, k, lms, lseq, lstate, s, lo, hi, av)
          where o.asset = a and o.day = d
          union all
          select m, k, lms, lseq, lstate, s, lo, hi, null::numeric
        ) u
      ) x
      where r.asset = a and r.day = d;
    end if;
  end $$`)
    .execute(db);
}

async function createTable(db: Db): Promise<void> {
  await sql`create table sample_minutes (
    asset integer not null, minute ${ts} not null, n integer not null, block bytea not null,
    primary key (asset, minute)
  ) partition by range (minute)`.execute(db);
  await sql`create index sample_minutes_minute_idx on sample_minutes (minute)`.execute(db);
  await sql`alter table sample_minutes alter column block set storage external`.execute(db);
}

async function moveIn(db: Db, from: string): Promise<void> {
  const days = await sql<{ d: number | string }>`
    select distinct (floor(extract(epoch from minute) / 86400) * 86400000)::bigint as d from ${sql.table(from)}`.execute(db);
  for (const { d } of days.rows) {
    const start = Number(d);
    await sql`create table if not exists ${sql.id(`sample_minutes_d${dayLabel(start)}`)} partition of sample_minutes
      for values from (${sql.lit(new Date(start).toISOString())}) to (${sql.lit(new Date(start + DAY_MS).toISOString())})`.execute(db);
  }
  await sql`insert into sample_minutes select * from ${sql.table(from)}`.execute(db);
  await sql`drop table ${sql.table(from)}`.execute(db);
}

/** The 0009 view, reading packed minutes through the SQL decoder. */
async function createView(db: Db): Promise<void> {
  await sql`create view samples as
    select a.mint, r.ts, r.seq, r.discount, r.discount_raw, peg_state_name(r.state) as state, r.market_usd, r.intrinsic_usd
    from sample_rows r join assets a on a.sample_id = r.asset
    union all
    select a.mint, p.minute + u.off * interval '1 millisecond', u.seq, u.discount, u.discount_raw, peg_state_name(u.state),
           u.market_usd, u.intrinsic_usd
    from sample_minutes p join assets a on a.sample_id = p.asset
    cross join lateral sample_block_rows(p.block) u`.execute(db);
}

/** 0009's view over `rollup_minutes`, now with the packed days' minutes too (each minute is in one of the two). */
async function createRollupView(db: Db): Promise<void> {
  await sql`drop view rollups_1m`.execute(db);
  await sql`create view rollups_1m as
    select a.mint, r.minute, coalesce(r.avg_discount, r.sum_discount / r.samples) as avg_discount, r.min_discount,
           r.max_discount, r.samples, peg_state_name(r.last_state) as last_state,
           r.minute + r.last_ms * interval '1 millisecond' as last_ts, r.sum_discount, r.last_seq
    from (
      select asset, minute, samples, last_ms, last_seq, last_state, sum_discount, min_discount, max_discount, avg_discount
      from rollup_minutes
      union all
      select d.asset, d.day + u.m * interval '1 minute', u.k, u.lms, u.lseq, u.lstate, u.s, u.lo, u.hi, u.av
      from rollup_days d cross join lateral unnest(d.minutes, d.samples, d.last_ms, d.last_seq, d.last_state, d.sum_discount,
        d.min_discount, d.max_discount, d.avg_discount) as u (m, k, lms, lseq, lstate, s, lo, hi, av)
    ) r join assets a on a.sample_id = r.asset`.execute(db);
}

export async function up(db: Db): Promise<void> {
  await createDecoders(db);
  await sql`drop view samples`.execute(db);
  await convertRows(db);
  await sql`drop table sample_minutes`.execute(db);
  await createTable(db);
  await moveIn(db, "sample_minutes_0010");
  await createView(db);
  await createRollupDays(db);
  await createRollupView(db);
}

/** Back to 0009's arrays, decoded in SQL, and every packed rollup day back to one row a minute. */
export async function down(db: Db): Promise<void> {
  await sql`drop view rollups_1m`.execute(db);
  const days = await sql<{ d: number | string }>`select distinct (extract(epoch from day) * 1000)::bigint as d from rollup_days`.execute(db);
  for (const { d } of days.rows) {
    const start = Number(d);
    await sql`create table if not exists ${sql.id(`rollup_minutes_d${dayLabel(start)}`)} partition of rollup_minutes
      for values from (${sql.lit(new Date(start).toISOString())}) to (${sql.lit(new Date(start + DAY_MS).toISOString())})`.execute(db);
  }
  await sql`insert into rollup_minutes (asset, minute, samples, last_ms, last_seq, last_state, sum_discount, min_discount, max_discount, avg_discount)
    select d.asset, d.day + u.m * interval '1 minute', u.k, u.lms, u.lseq, u.lstate, u.s, u.lo, u.hi, u.av
    from rollup_days d cross join lateral unnest(d.minutes, d.samples, d.last_ms, d.last_seq, d.last_state, d.sum_discount,
      d.min_discount, d.max_discount, d.avg_discount) as u (m, k, lms, lseq, lstate, s, lo, hi, av)`.execute(db);
  await sql`drop table rollup_days`.execute(db);
  await sql`drop function rollup_days_merge(integer, timestamptz, smallint, integer, numeric, numeric, numeric, integer, integer, smallint)`.execute(db);
  await sql`alter table sample_pack_state drop column rollups_packed_until`.execute(db);
  await sql`create view rollups_1m as
    select a.mint, r.minute, coalesce(r.avg_discount, r.sum_discount / r.samples) as avg_discount, r.min_discount,
           r.max_discount, r.samples, peg_state_name(r.last_state) as last_state,
           r.minute + r.last_ms * interval '1 millisecond' as last_ts, r.sum_discount, r.last_seq
    from rollup_minutes r join assets a on a.sample_id = r.asset`.execute(db);
  await sql`drop view samples`.execute(db);
  await sql`create table sample_minutes_0009 as
    select p.asset, p.minute, p.n, array_agg(u.off order by u.off, u.seq) as offsets, array_agg(u.seq order by u.off, u.seq) as seqs,
           array_agg(u.state order by u.off, u.seq) as states, array_agg(u.discount order by u.off, u.seq) as discount,
           array_agg(u.discount_raw order by u.off, u.seq) as discount_raw, array_agg(u.market_usd order by u.off, u.seq) as market_usd,
           array_agg(u.intrinsic_usd order by u.off, u.seq) as intrinsic_usd
    from sample_minutes p cross join lateral sample_block_rows(p.block) u
    group by p.asset, p.minute, p.n`.execute(db);
  await sql`drop table sample_minutes`.execute(db);
  await sql`create table sample_minutes (
    asset integer not null, minute ${ts} not null, n integer not null,
    offsets integer[] not null, seqs integer[] not null, states smallint[] not null,
    discount numeric[] not null, discount_raw numeric[] not null, market_usd numeric[] not null, intrinsic_usd numeric[] not null,
    primary key (asset, minute)
  ) partition by range (minute)`.execute(db);
  await sql`create index sample_minutes_minute_idx on sample_minutes (minute)`.execute(db);
  await moveIn(db, "sample_minutes_0009");
  await sql`create view samples as
    select a.mint, r.ts, r.seq, r.discount, r.discount_raw, peg_state_name(r.state) as state, r.market_usd, r.intrinsic_usd
    from sample_rows r join assets a on a.sample_id = r.asset
    union all
    select a.mint, p.minute + u.off * interval '1 millisecond', u.seq, u.discount, u.discount_raw, peg_state_name(u.state),
           u.market_usd, u.intrinsic_usd
    from sample_minutes p join assets a on a.sample_id = p.asset
    cross join lateral unnest(p.offsets, p.seqs, p.states, p.discount, p.discount_raw, p.market_usd, p.intrinsic_usd)
      as u (off, seq, state, discount, discount_raw, market_usd, intrinsic_usd)`.execute(db);
  for (const f of ["sample_block_rows(bytea)", "sample_block_decimals(bytea, integer, integer)", "sample_block_varint(bytea, integer)", "sample_block_keys(bytea)"]) {
    await sql.raw(`drop function ${f}`).execute(db);
  }
}
