// Where a running `replyflow start` is, told to the CLI of the same clone so that a call from another
// terminal reaches it with no settings: a small file, written once the start runs and removed when it
// stops, owner-only (mode 0600) though it holds no secret, only addresses, the data dir and the pid.
// A file whose process is gone (a start that was killed) counts as no file.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/** Where the start of this clone writes it unless REPLYFLOW_RUNTIME_FILE says otherwise. */
export const DEFAULT_RUNTIME_FILE = path.resolve(__dirname, '..', '.replyflow', 'running.json');

const runningStartSchema = z.object({
  pid: z.number().int().positive(),
  startedAt: z.string(),
  /** The receiver's URL from this machine: what the CLI takes as REPLYFLOW_URL. */
  receiverUrl: z.url(),
  /** Absolute: what the CLI takes as REPLYFLOW_DATA_DIR (the embedded PostgreSQL, the payload key). */
  dataDir: z.string().min(1),
  /** The Temporal frontend the start uses (TEMPORAL_ADDRESS for the `temporal` CLI). */
  temporalAddress: z.string().min(1),
  temporalUi: z.url().optional(),
});

type RunningStart = z.infer<typeof runningStartSchema>;

/** A running start as its file describes it, and where that file is (for errors that name it). */
export type FoundStart = RunningStart & { file: string };

function readRecord(file: string): RunningStart | undefined {
  try {
    const parsed = runningStartSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The start that `file` describes, when its process still runs; undefined for no file, a bad one or a stale one. */
export function findRunningStart(file: string): FoundStart | undefined {
  const record = readRecord(file);
  return record && alive(record.pid) ? { ...record, file } : undefined;
}

/**
 * Writes `record` to `file`, unless another start that still runs wrote it first (two starts of one
 * clone on different ports): the CLI keeps finding that one. @returns that other start, else undefined.
 */
export function claimRuntimeFile(file: string, record: RunningStart): FoundStart | undefined {
  const other = findRunningStart(file);
  if (other && other.pid !== record.pid) return other;
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // Written aside and renamed: a CLI call never reads half a file.
  const next = `${file}.${record.pid}.tmp`;
  writeFileSync(next, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  renameSync(next, file);
  return undefined;
}

/** Removes `file` if the start `pid` wrote it (synchronous: it runs on the process's way out too). */
export function releaseRuntimeFile(file: string, pid: number): void {
  if (readRecord(file)?.pid === pid) rmSync(file, { force: true });
}
