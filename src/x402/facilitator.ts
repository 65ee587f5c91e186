/**
 * Who verifies and settles payments: the x402 project's own facilitator code in this process (self-facilitated: the
 * `exact` Solana scheme of `@x402/svm`, signing as fee payer with the anchoring fee payer and talking to
 * SOLANA_RPC_URL), or a remote facilitator (X402_FACILITATOR_URL) through `@x402/core`'s HTTP client.
 *
 * The library turns every failure of its RPC calls into a refusal ("simulation failed", "transaction failed"). A
 * payment must not be refused because the node was unreachable: the signer below records, per call, that the RPC
 * itself failed (a transport error, an HTTP error status, a timeout), and the gate answers "unavailable" instead,
 * without charging anything.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { isSolanaError, SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR, type KeyPairSigner } from "@solana/kit";
import { x402Facilitator } from "@x402/core/facilitator";
import { HTTPFacilitatorClient, type FacilitatorClient } from "@x402/core/server";
import type { SupportedResponse } from "@x402/core/types";
import { createRpcClient, toFacilitatorSvmSigner, type FacilitatorSvmSigner } from "@x402/svm";
import { ExactSvmScheme } from "@x402/svm/exact/facilitator";
import type { X402Network } from "./config.ts";

/** Per call: why the RPC (or the facilitator) could not be reached, if it could not. */
export interface CallTrouble {
  unavailable: string | null;
}

const trouble = new AsyncLocalStorage<CallTrouble>();

/** Runs `fn` recording RPC trouble in a fresh record, returned with the result. */
export async function withTrouble<T>(fn: () => Promise<T>): Promise<{ value: T; trouble: CallTrouble } | { error: unknown; trouble: CallTrouble }> {
  const t: CallTrouble = { unavailable: null };
  try {
    return { value: await trouble.run(t, fn), trouble: t };
  } catch (error) {
    return { error, trouble: t };
  }
}

/** True for a failure to reach the node at all, as opposed to an answer (a JSON-RPC error is an answer). */
function unreachable(e: unknown): boolean {
  if (isSolanaError(e, SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR)) return true;
  return !isSolanaError(e); // fetch failed, connection refused, aborted by the timeout
}

function note(e: unknown): void {
  const t = trouble.getStore();
  if (t !== undefined && t.unavailable === null) t.unavailable = `the Solana RPC did not answer: ${e instanceof Error ? e.message : String(e)}`;
}

const errText = (v: unknown): string => JSON.stringify(v, (_, x: unknown) => (typeof x === "bigint" ? x.toString() : x));

/**
 * The library's facilitator signer over `rpcUrl`, with a deadline on each call and unreachable-node failures
 * recorded (see the module comment). Simulation is the library's (no signature check, the transaction's own
 * blockhash, "confirmed"), so an expired blockhash is a simulation error `BlockhashNotFound`.
 */
export function svmSigner(feePayer: KeyPairSigner, rpcUrl: string, network: X402Network, timeoutMs: number): FacilitatorSvmSigner {
  const base = toFacilitatorSvmSigner(feePayer, { defaultRpcUrl: rpcUrl });
  const rpc = createRpcClient(network.caip2, rpcUrl);
  return {
    ...base,
    // The library asks with its defaults only: signatures are checked by the scheme itself, the blockhash is the
    // transaction's own (an expired one fails the simulation).
    simulateTransaction: async (transaction) => {
      let result;
      try {
        result = await rpc
          .simulateTransaction(transaction as Parameters<typeof rpc.simulateTransaction>[0], { sigVerify: false, replaceRecentBlockhash: false, commitment: "confirmed", encoding: "base64" })
          .send({ abortSignal: AbortSignal.timeout(timeoutMs) });
      } catch (e) {
        if (unreachable(e)) note(e);
        throw e;
      }
      if (result.value.err !== null) throw new Error(`Simulation failed: ${errText(result.value.err)}`);
    },
    sendTransaction: async (transaction, net) => {
      try {
        return await base.sendTransaction(transaction, net);
      } catch (e) {
        if (unreachable(e)) note(e);
        throw e;
      }
    },
    confirmTransaction: async (signature, net) => {
      try {
        await base.confirmTransaction(signature, net);
      } catch (e) {
        if (unreachable(e)) note(e);
        throw e;
      }
    },
  };
}

/** This process as the facilitator of `network`: the x402 `exact` Solana scheme, paying fees with `feePayer`. */
export function localFacilitator(opts: { feePayer: KeyPairSigner; rpcUrl: string; network: X402Network; timeoutMs?: number }): FacilitatorClient {
  const facilitator = new x402Facilitator().register(opts.network.caip2, new ExactSvmScheme(svmSigner(opts.feePayer, opts.rpcUrl, opts.network, opts.timeoutMs ?? 10_000)));
  return {
    verify: (payload, requirements) => facilitator.verify(payload, requirements),
    settle: (payload, requirements) => facilitator.settle(payload, requirements),
    getSupported: async () => facilitator.getSupported() as SupportedResponse,
  };
}

/** A remote facilitator (its /supported, /verify and /settle). A call that fails to reach it is recorded as trouble. */
export function remoteFacilitator(url: string, timeoutMs = 15_000): FacilitatorClient {
  const client = new HTTPFacilitatorClient({ url, timeoutMs });
  const guard = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (e) {
      const t = trouble.getStore();
      if (t !== undefined && t.unavailable === null) t.unavailable = `the x402 facilitator ${url} did not answer: ${e instanceof Error ? e.message : String(e)}`;
      throw e;
    }
  };
  return {
    verify: (p, r) => guard(() => client.verify(p, r)),
    settle: (p, r) => guard(() => client.settle(p, r)),
    getSupported: () => guard(() => client.getSupported()),
  };
}
