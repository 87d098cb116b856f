// The activities of the event workflow, built once per worker from their dependencies.
import { conversationActivities } from './conversation';
import { decisionActivities } from './decisions';
import type { ActivityDeps } from './deps';
import { effectActivities } from './effects';
import { ledgerActivities } from './ledger';
import { operationsActivities } from './operations';
import { replyActivities } from './reply';
import { sendActivities } from './send';

export type { ActivityDeps, Alert } from './deps';

export function createActivities(deps: ActivityDeps) {
  return {
    ...ledgerActivities(deps),
    ...replyActivities(deps),
    ...effectActivities(deps),
    ...sendActivities(deps),
    ...operationsActivities(deps),
    ...conversationActivities(deps),
    ...decisionActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
