// How every operator command runs: open a session, do the work, close the connections, and turn the
// outcome into an exit code and one clear line on stderr.

import { parseDuration } from '../config';
import { OperatorAccountError } from '../db/errors';
import { ConfigError } from '../errors';
import { errorMessage } from '../failures';
import { NotPermittedError, OperatorInputError, OperatorTokenRefusedError } from '../operator/errors';
import { type CliIo, printLine } from './io';
import { openSession, type Session } from './session';

/** Exit codes: documented in docs/cli.md. */
export const EXIT = {
  ok: 0,
  /** Not done as asked: no verdict in time, not confirmed, inconsistencies found, an error. */
  notDone: 1,
  /** Bad input or configuration: nothing was changed. */
  badInput: 2,
  /**
   * Refused: the workflow rejected the decision, or the operator's roles do not allow the command
   * (both audited), or the operator token is not valid; nothing was changed.
   */
  refused: 3,
} as const;

export interface CliContext {
  io: CliIo;
  setExitCode(code: number): void;
}

/** Wraps a command's work for commander: a session for it, its exit code, one line for what went wrong. */
export function operatorAction<A extends unknown[]>(
  ctx: CliContext,
  work: (session: Session, ...args: A) => Promise<number>,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    let session: Session | undefined;
    try {
      session = openSession(ctx.io);
      ctx.setExitCode(await work(session, ...args));
    } catch (err) {
      ctx.setExitCode(report(ctx.io, err));
    } finally {
      await session?.close().catch(() => {});
    }
  };
}

/** Prints what went wrong in one line and @returns the exit code it deserves. */
export function report(io: CliIo, err: unknown): number {
  printLine(io.stderr, `replyflow: ${errorMessage(err)}`);
  if (err instanceof NotPermittedError || err instanceof OperatorTokenRefusedError) return EXIT.refused;
  if (err instanceof OperatorInputError || err instanceof OperatorAccountError || err instanceof ConfigError)
    return EXIT.badInput;
  return EXIT.notDone;
}

/** `--since 1h` (that long ago) or an ISO 8601 time. */
export function parseTime(value: string, flag: string): Date {
  const ago = parseDuration(value);
  if (ago !== undefined) return new Date(Date.now() - ago);
  const at = Date.parse(value);
  if (Number.isNaN(at))
    throw new OperatorInputError(
      `${flag} expects a duration (30m, 4h, 7d) or an ISO 8601 time, not "${value}"`,
    );
  return new Date(at);
}

export function parseDurationFlag(value: string, flag: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new OperatorInputError(`${flag} expects a duration such as 30s, 15m, 4h or 7d`);
  return ms;
}
