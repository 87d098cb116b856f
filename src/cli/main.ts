// The `replyflow` command. `start` runs everything on embedded defaults; `receiver` and `worker` run
// one role against configured servers; the operator commands (docs/cli.md) find and decide held and
// failed work. `run(argv, io)` runs a command in-process and returns its exit code.

import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { runClusterCommand } from '../cluster/command';
import { type Config, loadClusterConfig, loadConfig, runtimeFileOf } from '../config';
import { ConfigError, RouteFileError } from '../errors';
import { errorMessage } from '../failures';
import { launch, type Running } from '../launcher';
import { createLogger, debugStack } from '../logger';
import { claimRuntimeFile, releaseRuntimeFile } from '../running-start';
import { TenantsFileError } from '../tenants/errors';
import { registerAccountCommands } from './account-commands';
import { type CliContext, EXIT } from './command';
import { type CliIo, processIo } from './io';
import { registerMaintenanceCommands } from './maintenance-commands';
import { registerRoutesCommands } from './routes-commands';
import { registerSetupCommand } from './setup-command';
import { registerTenantCommands } from './tenant-commands';
import { registerWorkCommands } from './work-commands';

/** The long-running commands' config: every problem listed in one line and exit 2, before anything starts. */
function loadConfigOrExit<C extends Config>(load: () => C = loadConfig as () => C): C {
  try {
    return load();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`replyflow: ${err.message}`);
      process.exit(EXIT.badInput);
    }
    throw err;
  }
}

/**
 * Why a start stopped, in one line: what a person at the terminal acts on. With its causes (a start
 * Temporal refused says why only in the cause). A route file's problems each keep their first line,
 * which says where: the rest is the YAML parser's excerpt of the file.
 */
function startRefusal(err: unknown): string {
  if (err instanceof RouteFileError) {
    const problems = err.problems.map((p) => p.split('\n')[0]!.replace(/:$/, ''));
    return `invalid route file ${err.file} (ROUTES_FILE): ${problems.join('; ')} (replyflow routes check ${err.file} lists them without starting anything)`;
  }
  return errorMessage(err).replace(/\s*\n\s*/g, ' ');
}

/** What `start` says while nobody can decide yet: operators are accounts an admin creates (docs/cli.md). */
const FIRST_OPERATOR_HINT = `
No operator accounts yet, so nobody can decide held or failed work. Create them (each token is shown once):
  npx replyflow operator add <name> --roles resend,mark-sent,discard,reprocess,conversation
  npx replyflow operator add <another name> --roles approve     # a resend needs a second person's approval
then \`npx replyflow login\` with the token, or sign in at the codec login above.`;

/** What the banner adds when a server listens somewhere other than the URL it prints (HOST=0.0.0.0). */
function listeningNote(url: string, listening: string | undefined): string {
  if (!listening || new URL(url).host === listening) return '';
  return listening.startsWith('0.0.0.0:') || listening.startsWith('[::]:')
    ? `  listening on ${listening}: every interface`
    : `  listening on ${listening}`;
}

/**
 * Tells the CLI of this clone where this start runs (its runtime file, src/running-start.ts), removed
 * again when the process ends. @returns what the banner says about reaching it from another terminal.
 */
function tellTheCli(config: Config, urls: Running['urls']): string {
  const file = runtimeFileOf(config);
  const dataDir = path.resolve(config.REPLYFLOW_DATA_DIR);
  const settings = `REPLYFLOW_URL=${urls.receiver} (operators), REPLYFLOW_DATA_DIR=${dataDir} (the admin's commands)`;
  const elsewhere = `  from elsewhere: ${settings}; the temporal CLI: --address ${urls.temporal}`;
  let other: ReturnType<typeof claimRuntimeFile>;
  try {
    other = claimRuntimeFile(file, {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      receiverUrl: urls.receiver,
      dataDir,
      temporalAddress: urls.temporal,
      ...(urls.temporalUi ? { temporalUi: urls.temporalUi } : {}),
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? errorMessage(err);
    return `Other terminals: the CLI cannot be told where this runs (${file}: ${code}); set ${settings}.`;
  }
  if (other)
    return `Other terminals: the CLI of this clone finds the replyflow start of pid ${other.pid} (${other.receiverUrl}), not this one; to reach this one set ${settings}.`;
  process.on('exit', () => releaseRuntimeFile(file, process.pid));
  return `Other terminals: any \`npx replyflow …\` in this clone finds this system (its runtime file: ${file}).\n${elsewhere}`;
}

function runRole(role: 'all' | 'receiver' | 'worker') {
  return async () => {
    const config = loadConfigOrExit();
    const logger = createLogger(config.LOG_LEVEL);
    let running: Awaited<ReturnType<typeof launch>>;
    try {
      running = await launch(config, logger, role);
    } catch (err) {
      console.error(`replyflow: ${startRefusal(err)}`);
      // Asked for with LOG_LEVEL=debug: where it came from, for whoever debugs replyflow.
      const { stack } = debugStack(logger, err);
      if (stack) console.error(stack);
      // A bad route or tenants file is bad configuration, refused before anything started.
      process.exit(
        err instanceof RouteFileError || err instanceof ConfigError || err instanceof TenantsFileError
          ? EXIT.badInput
          : EXIT.notDone,
      );
    }
    const { urls } = running;
    const lines = [
      urls.receiver &&
        `  receiver      ${urls.receiver}  (POST /webhooks/<provider>, /healthz, /readyz, /metrics)${listeningNote(urls.receiver, urls.receiverListening)}`,
      urls.sandbox && `  sandbox page  ${urls.sandbox}`,
      urls.temporalUi && `  Temporal UI   ${urls.temporalUi}`,
      urls.codecLogin &&
        `  codec login   ${urls.codecLogin}  (operators sign in with their token to read payloads and decide in the UI)`,
      urls.workerMetrics &&
        `  worker        ${urls.workerMetrics}${listeningNote(urls.workerMetrics, urls.workerMetricsListening)}`,
      `  Temporal      ${urls.temporal}`,
      `  PostgreSQL    ${urls.database}`,
    ].filter(Boolean);
    const reach = role === 'all' && urls.receiver ? `${tellTheCli(config, urls)}\n` : '';
    console.log(
      `replyflow is running (${role === 'all' ? 'everything' : role}):\n${lines.join('\n')}\n${reach}Press Ctrl-C to stop.`,
    );
    if (running.noOperators) console.log(FIRST_OPERATOR_HINT);
    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) {
        // A second Ctrl-C: stop waiting. What this process started ends with it (the dev server).
        console.log(`replyflow: ${signal} again, stopping now`);
        process.exit(130);
      }
      stopping = true;
      console.log(`replyflow: ${signal}, stopping… (again to stop at once)`);
      await running.stop();
      process.exit(0);
    };
    process.on('SIGINT', () => void shutdown('SIGINT'));
    process.on('SIGTERM', () => void shutdown('SIGTERM'));
    // A worker that dies on its own takes the process down, so a supervisor (or a person) restarts it.
    running.failed.catch(async (err: Error) => {
      if (stopping) return;
      stopping = true;
      console.error(`replyflow: ${err.message}; stopping everything`);
      await running.stop();
      process.exit(1);
    });
  };
}

function portNumber(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new InvalidArgumentError('a port number from 0 to 65535');
  return port;
}

function nodeCount(value: string): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > 5)
    throw new InvalidArgumentError('a count from 1 to 5');
  return count;
}

export function buildProgram(
  ctx: CliContext = {
    io: processIo(),
    setExitCode: (code) => {
      process.exitCode = code;
    },
  },
): Command {
  const program = new Command('replyflow')
    .description('Webhooks in, exactly one reply or side effect out, or a human decides (on Temporal).')
    // Inherited by every command added below: usage errors come back to run() instead of exiting.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => void ctx.io.stdout.write(text),
      writeErr: (text) => void ctx.io.stderr.write(text),
    });
  program
    .command('start')
    .description('run everything; embeds Temporal and PostgreSQL when their addresses are unset')
    .action(runRole('all'));
  program
    .command('receiver')
    .description('run the webhook receiver against TEMPORAL_ADDRESS and DATABASE_URL')
    .action(runRole('receiver'));
  program
    .command('worker')
    .description('run a worker against TEMPORAL_ADDRESS and DATABASE_URL')
    .action(runRole('worker'));
  program
    .command('cluster')
    .description(
      "run a real Temporal cluster on PostgreSQL here: Temporal's own server, two nodes on loopback (built on first use)",
    )
    .option(
      '--port <port>',
      'the frontend port clients use (TEMPORAL_ADDRESS); 0 picks a free one',
      portNumber,
      7233,
    )
    .option('--nodes <count>', 'Temporal server nodes', nodeCount, 2)
    // TEMPORAL_DATABASE_URL is read with the other settings (src/config.ts), not by commander.
    .option(
      '--database-url <url>',
      "a PostgreSQL role that may create Temporal's databases (default: an embedded PostgreSQL under the data dir) (env: TEMPORAL_DATABASE_URL)",
    )
    .action(async (options: { port: number; nodes: number; databaseUrl?: string }) => {
      const config = loadConfigOrExit(loadClusterConfig);
      await runClusterCommand({
        ...options,
        databaseUrl: options.databaseUrl ?? config.TEMPORAL_DATABASE_URL,
        dataDir: config.REPLYFLOW_DATA_DIR,
        namespace: config.TEMPORAL_NAMESPACE,
      });
    });
  registerWorkCommands(program, ctx);
  registerMaintenanceCommands(program, ctx);
  registerAccountCommands(program, ctx);
  registerTenantCommands(program, ctx);
  registerSetupCommand(program, ctx);
  registerRoutesCommands(program, ctx);
  return program;
}

/** Runs one command line (without `node replyflow`) and returns its exit code; long-running roles keep running. */
export async function run(argv: string[], io: CliIo = processIo()): Promise<number> {
  let code: number = EXIT.ok;
  const program = buildProgram({
    io,
    setExitCode: (next) => {
      code = next;
    },
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.badInput;
    throw err;
  }
  return code;
}

/** Runs this process's command line and exits with its code: bin/replyflow.js, or this file run directly. */
export function runCommandLine(): void {
  run(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      console.error(`replyflow: ${errorMessage(err)}`);
      process.exit(1);
    },
  );
}

if (require.main === module) runCommandLine();
