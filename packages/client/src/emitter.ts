/** Listeners by event name for `PegStream.on()`: typed by an event map, run synchronously in the order added. */
export class Emitter<Events extends object> {
  readonly #listeners = new Map<keyof Events, Set<(payload: never) => void>>();

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): () => void {
    let set = this.#listeners.get(event);
    if (set === undefined) this.#listeners.set(event, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => this.off(event, listener);
  }

  off<K extends keyof Events>(event: K, listener: (payload: Events[K]) => void): void {
    this.#listeners.get(event)?.delete(listener as (payload: never) => void);
  }

  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const set = this.#listeners.get(event);
    if (set === undefined) return;
    for (const l of [...set]) {
      try {
        (l as (p: Events[K]) => void)(payload);
      } catch (e) {
        // A throwing listener must not corrupt the emitter's owner: report it the way an EventTarget does.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }
}
