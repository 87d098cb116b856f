// Where the CLI finds the operator's token: REPLYFLOW_OPERATOR_TOKEN, else the per-user file that
// `replyflow login` writes with mode 0600. A token file that others may read is refused, as ssh
// refuses such a key: whoever reads it can decide in the operator's name.
import { mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../config';
import { OperatorInputError } from '../operator/errors';

/** REPLYFLOW_OPERATOR_TOKEN_FILE, else `$XDG_CONFIG_HOME/replyflow/operator-token` (~/.config by default). */
export function tokenFile(config: Config, env: NodeJS.ProcessEnv): string {
  if (config.REPLYFLOW_OPERATOR_TOKEN_FILE) return path.resolve(config.REPLYFLOW_OPERATOR_TOKEN_FILE);
  const xdg = env.XDG_CONFIG_HOME?.trim();
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(env.HOME?.trim() || os.homedir(), '.config');
  return path.join(base, 'replyflow', 'operator-token');
}

export function operatorToken(config: Config, env: NodeJS.ProcessEnv): string {
  if (config.REPLYFLOW_OPERATOR_TOKEN) return config.REPLYFLOW_OPERATOR_TOKEN.trim();
  const file = tokenFile(config, env);
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    throw new OperatorInputError(
      `no operator token: run \`replyflow login\` (it keeps the token in ${file}) or set REPLYFLOW_OPERATOR_TOKEN`,
    );
  }
  if ((mode & 0o077) !== 0)
    throw new OperatorInputError(
      `${file} may be read by others (mode ${(mode & 0o777).toString(8)}): \`chmod 600 ${file}\``,
    );
  const token = readFileSync(file, 'utf8').trim();
  if (!token) throw new OperatorInputError(`${file} is empty: run \`replyflow login\` again`);
  return token;
}

/** Writes the token readable by its owner only; the file is replaced whole, never left half written. */
export function storeToken(file: string, token: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, `${token}\n`, { mode: 0o600 });
  renameSync(partial, file);
}

/** @returns whether there was a file to remove. */
export function removeToken(file: string): boolean {
  try {
    unlinkSync(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
