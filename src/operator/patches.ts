// How many open event runs still need each patch's old path (issue 26, docs/deploy.md "Patches and the
// runs that need them"): what an operator reads before retiring a patch. Temporal's SDK adds a patch's
// id to the run's TemporalChangeVersion search attribute when the run records it, so a run that did is
// on the new path; a run started before the patch landed that did not may have passed the patch's
// point on the old path, and replaying it needs that path. Reads only.
import type { Client } from '@temporalio/client';
import { PATCHES, type PatchEntry } from '../../workflows/patches';

interface PatchUse {
  id: string;
  added: PatchEntry['added'];
  deprecated?: PatchEntry['deprecated'];
  recordedByNewRuns: boolean;
  /** Runs started before this are counted as possibly on the old path: the end of the day it landed (UTC). */
  cutoff: string;
  /** Open event runs that recorded the patch: on its new path. */
  recorded: number;
  /** Open event runs started before the cutoff. */
  startedBefore: number;
  /** Of those, the ones that did not record it: they may need the old path, which stays while this is not 0. */
  mayNeedOldPath: number;
}

export interface PatchReport {
  checkedAt: string;
  taskQueue?: string;
  /** Open event runs in all (on the task queue, when one was given). */
  openRuns: number;
  patches: PatchUse[];
}

const DAY_MS = 24 * 3_600_000;

/** A run started on the day a patch landed may have been started by the release before it. */
function cutoffOf(entry: PatchEntry): string {
  return new Date(Date.parse(`${entry.added.date}T00:00:00Z`) + DAY_MS).toISOString();
}

/** A visibility string literal: the task queue is the operator's input. */
function quoted(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

export async function patchReport(
  client: Client,
  options: { taskQueue?: string } = {},
): Promise<PatchReport> {
  const open = [
    'WorkflowType="handleEvent"',
    'ExecutionStatus="Running"',
    ...(options.taskQueue ? [`TaskQueue=${quoted(options.taskQueue)}`] : []),
  ].join(' AND ');
  const count = async (query: string) => (await client.workflow.count(query)).count;
  const patches = await Promise.all(
    PATCHES.map(async (entry): Promise<PatchUse> => {
      const cutoff = cutoffOf(entry);
      const marker = `TemporalChangeVersion=${quoted(entry.id)}`;
      const before = `StartTime < ${quoted(cutoff)}`;
      const [recorded, startedBefore, recordedBefore] = await Promise.all([
        count(`${open} AND ${marker}`),
        count(`${open} AND ${before}`),
        count(`${open} AND ${before} AND ${marker}`),
      ]);
      return {
        id: entry.id,
        added: entry.added,
        ...(entry.deprecated ? { deprecated: entry.deprecated } : {}),
        recordedByNewRuns: entry.recordedByNewRuns,
        cutoff,
        recorded,
        startedBefore,
        mayNeedOldPath: startedBefore - recordedBefore,
      };
    }),
  );
  return {
    checkedAt: new Date().toISOString(),
    ...(options.taskQueue ? { taskQueue: options.taskQueue } : {}),
    openRuns: await count(open),
    patches,
  };
}
