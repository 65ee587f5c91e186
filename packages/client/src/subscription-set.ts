/**
 * What a `PegStream` is subscribed to, kept by the client the way the server keeps it (`src/http/ws/hub.ts`), so a
 * new connection can ask for the same again and events of assets no longer wanted can be told apart.
 */

/** The assets a stream delivers: every asset but `except`, or exactly `assets`. */
export type Subscription =
  | { readonly all: true; /** Symbols unsubscribed from "every asset". */ readonly except: readonly string[] }
  | { readonly all: false; readonly assets: readonly string[] };

export class SubscriptionSet {
  #all = false;
  /** The symbols, when not every asset. */
  readonly #assets = new Set<string>();
  /** The symbols left out of "every asset". */
  readonly #except = new Set<string>();

  constructor(assets: readonly string[]) {
    this.subscribe(assets);
  }

  get view(): Subscription {
    return this.#all ? { all: true, except: [...this.#except] } : { all: false, assets: [...this.#assets] };
  }

  /** Whether events of `symbol` are wanted. */
  wants(symbol: string): boolean {
    return this.#all ? !this.#except.has(symbol) : this.#assets.has(symbol);
  }

  /** `"*"` is every asset (the exceptions cleared); symbols are added, or taken back out of the exceptions. */
  subscribe(symbols: readonly string[]): void {
    if (symbols.includes("*")) {
      this.#all = true;
      this.#assets.clear();
      this.#except.clear();
      return;
    }
    for (const s of symbols) {
      if (this.#all) this.#except.delete(s);
      else this.#assets.add(s);
    }
  }

  /** `"*"` is nothing at all; symbols are removed, or, from every asset, become exceptions. */
  unsubscribe(symbols: readonly string[]): void {
    if (symbols.includes("*")) {
      this.#all = false;
      this.#assets.clear();
      this.#except.clear();
      return;
    }
    for (const s of symbols) {
      if (this.#all) this.#except.add(s);
      else this.#assets.delete(s);
    }
  }

  /** Whether this is "every asset but some" (the server then holds the list of the others active at the time). */
  get allWithExceptions(): boolean {
    return this.#all && this.#except.size > 0;
  }

  /** Whether this is every asset, none left out. */
  get everything(): boolean {
    return this.#all && this.#except.size === 0;
  }

  /**
   * The messages that set a new connection up like this: a subscribe (none when nothing is subscribed), then, for
   * every asset but some, an unsubscribe of those. `sinceSeq` goes with the subscribe.
   */
  establish(sinceSeq: number | null): { op: "subscribe" | "unsubscribe"; assets: string[]; since_seq?: number }[] {
    const since = sinceSeq === null ? {} : { since_seq: sinceSeq };
    if (!this.#all) return this.#assets.size === 0 ? [] : [{ op: "subscribe", assets: [...this.#assets], ...since }];
    const out: { op: "subscribe" | "unsubscribe"; assets: string[]; since_seq?: number }[] = [{ op: "subscribe", assets: ["*"], ...since }];
    if (this.#except.size > 0) out.push({ op: "unsubscribe", assets: [...this.#except] });
    return out;
  }
}
