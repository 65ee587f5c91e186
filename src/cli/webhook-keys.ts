/**
 * `peg-oracle webhook-keys rotate [--json]`: asks the running deployment to rotate its webhook signing key (the new
 * key signs at once; the old one stays listed as `retiring` for 7 days so receivers keep verifying in-flight
 * deliveries). It talks to the service over NATS (src/delivery/key-admin.ts), never to the database: `NATS_URL`, or
 * with the embedded server, the URL the running service wrote beside `DATA_DIR/nats`. Exit 0 rotated, 1 no service
 * answered or the rotation failed, 2 usage.
 */
import { existsSync, readFileSync } from "node:fs";
import { connect } from "@nats-io/transport-node";
import type { Config } from "../config.ts";
import { requestRotation } from "../delivery/index.ts";
import { embeddedNatsUrlFile } from "../streams/jetstream/index.ts";
import { EXIT, writeLine, type CliIO } from "./io.ts";

export const WEBHOOK_KEYS_USAGE = "peg-oracle webhook-keys rotate [--json]";

function natsServers(config: Config): readonly string[] | string {
  if (config.nats.kind === "external") return config.nats.servers;
  const file = embeddedNatsUrlFile(config.nats.storeDir);
  if (!existsSync(file)) return `no running service found: NATS_URL is unset and ${file} does not exist (is the service running with this DATA_DIR?)`;
  return [readFileSync(file, "utf8").trim()];
}

export async function webhookKeysCommand(args: readonly string[], io: CliIO, config: Config): Promise<number> {
  const [sub, ...rest] = args;
  const json = rest.includes("--json");
  if (sub !== "rotate" || rest.some((a) => a !== "--json")) {
    writeLine(io.stderr, `usage: ${WEBHOOK_KEYS_USAGE}`);
    return EXIT.usage;
  }
  const servers = natsServers(config);
  if (typeof servers === "string") {
    writeLine(io.stderr, servers);
    return EXIT.failure;
  }
  let nc;
  try {
    nc = await connect({ servers: [...servers], timeout: 5_000 });
  } catch (e) {
    writeLine(io.stderr, `cannot reach NATS at ${servers.join(",")}: ${e instanceof Error ? e.message : String(e)}`);
    return EXIT.failure;
  }
  try {
    const reply = await requestRotation(nc);
    if (!reply.ok) {
      writeLine(io.stderr, `rotation failed: ${reply.error}`);
      return EXIT.failure;
    }
    if (json) writeLine(io.stdout, JSON.stringify(reply));
    else {
      writeLine(io.stdout, `rotated: ${reply.kid} signs from now on`);
      for (const k of reply.keys) writeLine(io.stdout, `  ${k.kid}  ${k.status}  created ${k.created_at}`);
    }
    return EXIT.ok;
  } catch (e) {
    writeLine(io.stderr, `no service answered the rotation request: ${e instanceof Error ? e.message : String(e)}`);
    return EXIT.failure;
  } finally {
    await nc.close();
  }
}
