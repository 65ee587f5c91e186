/**
 * The SPL stake-pool account layout (Borsh, `spl_stake_pool::state::StakePool`), as far as the rate needs it. The
 * fixed-size prefix is:
 *
 *   0   account_type u8 (1 = StakePool)      130 reserve_stake Pubkey
 *   1   manager Pubkey                        162 pool_mint Pubkey
 *   33  staker Pubkey                         194 manager_fee_account Pubkey
 *   65  stake_deposit_authority Pubkey        226 token_program_id Pubkey
 *   97  stake_withdraw_bump_seed u8           258 total_lamports u64 LE
 *   98  validator_list Pubkey                 266 pool_token_supply u64 LE
 *                                             274 last_update_epoch u64 LE
 *
 * Sanctum's deployments of the program (SP12tW…, SPMBzs…) keep the same layout.
 */
import { base58Encode } from "../../../catalog/index.ts";
import { D, type Decimal } from "../../../methodology/index.ts";
import { MalformedPayloadError } from "./errors.ts";

export const STAKE_POOL_LAYOUT = Object.freeze({
  accountType: 0,
  poolMint: 162,
  totalLamports: 258,
  poolTokenSupply: 266,
  lastUpdateEpoch: 274,
  /** Bytes up to the end of last_update_epoch: a shorter account cannot be a stake pool. */
  minLength: 282,
});

const ACCOUNT_TYPE_STAKE_POOL = 1;

/** The fields of a stake pool the rate needs. */
export interface StakePoolState {
  /** The LST mint the pool issues, base58. */
  readonly poolMint: string;
  /** Lamports under management (stake accounts plus reserve) at the last update. */
  readonly totalLamports: bigint;
  /** Pool tokens in circulation, in base units. */
  readonly poolTokenSupply: bigint;
  /** Epoch of the last `UpdateStakePoolBalance`: the rate is as of this epoch. */
  readonly lastUpdateEpoch: bigint;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict base64 (the RPC's `["<data>", "base64"]` form); Buffer.from alone would skip invalid characters. */
export function decodeBase64(text: string): Buffer {
  if (!BASE64.test(text)) throw new MalformedPayloadError("account data is not base64");
  return Buffer.from(text, "base64");
}

/** Decodes the prefix above. Throws MalformedPayloadError for a short account or another account type. */
export function decodeStakePool(data: Uint8Array): StakePoolState {
  if (data.length < STAKE_POOL_LAYOUT.minLength) {
    throw new MalformedPayloadError(`stake pool account is ${data.length} bytes, needs at least ${STAKE_POOL_LAYOUT.minLength}`);
  }
  if (data[STAKE_POOL_LAYOUT.accountType] !== ACCOUNT_TYPE_STAKE_POOL) {
    throw new MalformedPayloadError(`account type ${String(data[0])} is not a stake pool (1)`);
  }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  return {
    poolMint: base58Encode(data.subarray(STAKE_POOL_LAYOUT.poolMint, STAKE_POOL_LAYOUT.poolMint + 32)),
    totalLamports: view.getBigUint64(STAKE_POOL_LAYOUT.totalLamports, true),
    poolTokenSupply: view.getBigUint64(STAKE_POOL_LAYOUT.poolTokenSupply, true),
    lastUpdateEpoch: view.getBigUint64(STAKE_POOL_LAYOUT.lastUpdateEpoch, true),
  };
}

/**
 * SOL per pool token: total_lamports / pool_token_supply (both 9-decimal amounts, so the ratio needs no scaling),
 * to 34 significant digits. Throws MalformedPayloadError for an empty pool.
 */
export function stakePoolRate(state: StakePoolState): Decimal {
  if (state.poolTokenSupply === 0n) throw new MalformedPayloadError("stake pool has no pool tokens");
  return new D(state.totalLamports.toString()).div(new D(state.poolTokenSupply.toString()));
}
