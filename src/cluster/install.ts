// Temporal's own server and its SQL schema tool, built on demand with `go install` into .tools/: PyPI
// carries only the dev server, and these machines reach the Go module proxy but no release downloads.
// Pinned to the server inside the pinned Temporal CLI (README "Toolchain versions"), so that the tests
// on the dev server and on the cluster run one server version.
import { spawn } from 'node:child_process';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processEnvironment } from '../config';
import { isExecutable, TOOLS_DIR } from '../temporal/binaries';
import { TemporalServerInstallError } from './errors';

export const TEMPORAL_SERVER_VERSION = '1.32.0';
const MODULE = 'go.temporal.io/server';
/** The packages `go install` builds, and the names Temporal's own images give their binaries. */
const COMMANDS = [
  { pkg: `${MODULE}/cmd/server`, built: 'server', name: 'temporal-server' },
  { pkg: `${MODULE}/cmd/tools/sql`, built: 'sql', name: 'temporal-sql-tool' },
] as const;

/** One directory per version: a changed pin builds anew instead of reusing an older binary. */
const SERVER_DIR = path.join(TOOLS_DIR, `temporal-server-${TEMPORAL_SERVER_VERSION}`);

interface TemporalServerBinaries {
  /** `temporal-server start --config-file …` */
  server: string;
  /** `temporal-sql-tool`: creates the databases and applies the schema versions. */
  sqlTool: string;
}

function binariesIn(dir: string): TemporalServerBinaries {
  return { server: path.join(dir, 'temporal-server'), sqlTool: path.join(dir, 'temporal-sql-tool') };
}

/** The installed binaries, or undefined when `npm run cluster:install` has not run yet. */
export function findTemporalServer(): TemporalServerBinaries | undefined {
  const binaries = binariesIn(SERVER_DIR);
  return isExecutable(binaries.server) && isExecutable(binaries.sqlTool) ? binaries : undefined;
}

export function installCommand(): string {
  return `go install ${COMMANDS.map((c) => `${c.pkg}@v${TEMPORAL_SERVER_VERSION}`).join(' ')}`;
}

interface InstallResult {
  binaries: TemporalServerBinaries;
  /** False when they were already there and nothing was built. */
  built: boolean;
  seconds: number;
}

/**
 * Builds the pinned server and schema tool unless they are installed. The build goes to a scratch
 * directory that is renamed into place only when both binaries exist, so an interrupted build never
 * looks installed. It runs at low priority: a cold build takes many minutes of both cores.
 */
export async function installTemporalServer(log: (line: string) => void = () => {}): Promise<InstallResult> {
  const began = Date.now();
  const found = findTemporalServer();
  if (found) return { binaries: found, built: false, seconds: 0 };

  const scratch = `${SERVER_DIR}.partial`;
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  log(
    `building Temporal server ${TEMPORAL_SERVER_VERSION} and its SQL tool (${installCommand()}); ` +
      'the first build takes several minutes, later ones reuse the Go build cache',
  );
  await goInstall(scratch);
  for (const command of COMMANDS)
    renameSync(path.join(scratch, command.built), path.join(scratch, command.name));
  rmSync(SERVER_DIR, { recursive: true, force: true });
  renameSync(scratch, SERVER_DIR);
  return { binaries: binariesIn(SERVER_DIR), built: true, seconds: (Date.now() - began) / 1000 };
}

function goInstall(gobin: string): Promise<void> {
  const args = ['install', ...COMMANDS.map((c) => `${c.pkg}@v${TEMPORAL_SERVER_VERSION}`)];
  // Pure Go (the server's SQLite driver is too): no C compiler needed, the same binary as Temporal ships.
  const child = spawn('go', args, {
    env: { ...processEnvironment(), GOBIN: gobin, CGO_ENABLED: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (child.pid) {
    try {
      // The compiler processes go starts later inherit this.
      os.setPriority(child.pid, 10);
    } catch {
      // Not allowed here: build at normal priority.
    }
  }
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new TemporalServerInstallError(
          err.code === 'ENOENT'
            ? `\`go\` is not on PATH, so Temporal server ${TEMPORAL_SERVER_VERSION} cannot be built. Install Go ` +
                '(1.21 or newer: it fetches the toolchain the module asks for through the Go module proxy), ' +
                `then run \`npm run cluster:install\`.`
            : `could not run \`${installCommand()}\`: ${err.message}`,
        ),
      ),
    );
    child.once('exit', (code, signal) => {
      if (code === 0) return resolve();
      const lastLines = stderr
        .trim()
        .split('\n')
        .filter((line) => !line.startsWith('go: downloading'))
        .slice(-8)
        .join('\n');
      reject(
        new TemporalServerInstallError(
          `\`${installCommand()}\` failed (${signal ?? `exit ${code}`}):\n${lastLines}\n` +
            'The Go module proxy (GOPROXY) must be reachable; if the ' +
            "module or the Go toolchain it needs cannot be had, run the cluster from Temporal's images " +
            '(docker compose, docs/deploy.md) instead. Then run `npm run cluster:install` again.',
        ),
      );
    });
  });
}
