// The lease keeper's thread (src/streams/jetstream/lease-keeper.ts starts it): TypeScript through tsx, registered
// here because Node 20 does not pass ESM loaders to workers through `execArgv`.
import { register } from "tsx/esm/api";

register();
await import("./lease-keeper-worker.ts");
