/**
 * Entry point: the only module that reads process.env and process.argv. Everything else takes what it needs as
 * arguments.
 */
import { runCli } from "./cli/index.ts";

const code = await runCli(process.argv.slice(2), { env: process.env, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
process.exitCode = code;
