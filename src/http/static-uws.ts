import type { TemplatedApp } from "uWebSockets.js";
import type { StaticFile } from "./static.ts";
import { staticResponse } from "./static.ts";
import { send } from "./uws-adapter.ts";

/** Serves the loaded static files on `app` (GET and HEAD), ahead of the pipeline's catch-all. */
export function attachStatic(app: TemplatedApp, files: ReadonlyMap<string, StaticFile>): void {
  for (const [path, file] of files) {
    const handler = (method: string) => (res: Parameters<Parameters<TemplatedApp["get"]>[1]>[0], req: Parameters<Parameters<TemplatedApp["get"]>[1]>[1]) => {
      const inm = req.getHeader("if-none-match");
      send(res, method, staticResponse(file, inm === "" ? undefined : inm));
    };
    app.get(path, handler("GET"));
    app.head(path, handler("HEAD"));
  }
}
