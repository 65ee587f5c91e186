// The sample projector's thread (src/cli/sample-projector-thread.ts starts it): TypeScript through tsx, registered
// here because Node 20 does not pass ESM loaders to workers through `execArgv`.
import { register } from "tsx/esm/api";

register();
await import("./sample-projector-worker.ts");
