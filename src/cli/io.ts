// Where the CLI reads and writes, injectable so that tests run commands in-process, plus the plain
// text it prints: aligned tables, ages, and a progress bar that only draws on a terminal.
import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import { processEnvironment } from '../config';

interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: Output;
  stderr: Output;
  /** Asks a yes/no question; resolves false when nobody can answer it (not a terminal). */
  confirm(question: string): Promise<boolean>;
  /** Reads one secret line: typed without echo on a terminal, else the first line of stdin. */
  readSecret(prompt: string): Promise<string>;
}

/**
 * One of the process's streams for a reader that may leave early (`replyflow show … | head`): once
 * the pipe is closed, what is left to print has nobody to read it, so it is dropped and the command
 * ends as it would have, with its own exit code, instead of Node's EPIPE stack trace.
 */
function leavable(stream: NodeJS.WriteStream): Output {
  if (!stream.listeners('error').includes(ignoreClosedPipe)) stream.on('error', ignoreClosedPipe);
  return {
    get isTTY() {
      return stream.isTTY;
    },
    write: (text) => stream.writable && stream.write(text),
  };
}

function ignoreClosedPipe(err: NodeJS.ErrnoException): void {
  if (err.code !== 'EPIPE') throw err;
}

export function processIo(): CliIo {
  return {
    env: processEnvironment(),
    stdout: leavable(process.stdout),
    stderr: leavable(process.stderr),
    async confirm(question) {
      if (!process.stdin.isTTY) return false;
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
      } finally {
        rl.close();
      }
    },
    async readSecret(prompt) {
      if (!process.stdin.isTTY) {
        let text = '';
        for await (const chunk of process.stdin) text += chunk;
        return text.split('\n')[0]!.trim();
      }
      process.stderr.write(prompt);
      // Echo goes nowhere: the secret never shows on the screen or in the terminal's scrollback.
      const muted = new Writable({ write: (_chunk, _encoding, done) => done() });
      const rl = createInterface({ input: process.stdin, output: muted, terminal: true });
      try {
        return (await rl.question('')).trim();
      } finally {
        rl.close();
        process.stderr.write('\n');
      }
    },
  };
}

export function printLine(out: Output, line = ''): void {
  out.write(`${line}\n`);
}

export function printJson(out: Output, value: unknown): void {
  out.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Columns padded to their widest cell; the last column is not padded. */
export function table(header: string[], rows: Cell[][]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (c === undefined || c === null ? '-' : String(c))))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

type Cell = string | number | undefined | null;

/**
 * What a `list` command prints: the rows as JSON with `--json`, else `empty` when there are none,
 * else a table of `columns` (a header and how each row fills it).
 */
export function printListing<Row>(
  io: CliIo,
  rows: Row[],
  options: { json?: boolean; empty: string; columns: [string, (row: Row) => Cell][] },
): void {
  if (options.json) printJson(io.stdout, rows);
  else if (rows.length === 0) printLine(io.stdout, options.empty);
  else
    printLine(
      io.stdout,
      table(
        options.columns.map(([header]) => header),
        rows.map((row) => options.columns.map(([, cell]) => cell(row))),
      ),
    );
}

/** 45s, 12m, 5h, 3d: how long ago, at a glance. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

interface Progress {
  /** Clears the bar so a line can be printed where it was; the next update draws it again. */
  clear(): void;
  update(done: number): void;
  end(): void;
}

/** A bar on stderr when it is a terminal; nothing otherwise (each item's line on stdout says enough). */
export function progressBar(out: Output, total: number, width = 30): Progress {
  if (!out.isTTY || total === 0) return { clear() {}, update() {}, end() {} };
  const draw = (done: number) => {
    const filled = Math.round((done / total) * width);
    out.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`);
  };
  draw(0);
  return { clear: () => out.write('\r\x1b[K'), update: draw, end: () => out.write('\n') };
}
