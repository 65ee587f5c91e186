/**
 * Entry point: the only module that reads process.env and process.argv. Everything else takes what it needs as
 * arguments.
 */
import { readBuildCommit } from "./build-info.ts";
import { runCli } from "./cli/index.ts";

// The commit of this code (its checkout's HEAD, or build-info.json), GIT_SHA's default: receipts name the code that decided.
const build = readBuildCommit();
const code = await runCli(process.argv.slice(2), { env: process.env, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, build });
process.exitCode = code;
