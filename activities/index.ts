// The activities of the event workflow, built once per worker from their dependencies.
import { admitActivities } from './admit';
import { conversationActivities } from './conversation';
import { decisionActivities } from './decisions';
import type { ActivityDeps } from './deps';
import { effectActivities } from './effects';
import { ledgerActivities } from './ledger';
import { operationsActivities } from './operations';
import { replyActivities } from './reply';
import { sendActivities } from './send';
import { tenantActivities } from './tenants';

export type { ActivityDeps, Alert } from './deps';

export function createActivities(deps: ActivityDeps) {
  const ledger = ledgerActivities(deps);
  const reply = replyActivities(deps);
  const conversation = conversationActivities(deps);
  const effects = effectActivities(deps);
  return {
    ...ledger,
    ...reply,
    ...conversation,
    ...effects,
    ...admitActivities({ ledger, reply, conversation, effects }),
    ...sendActivities(deps),
    ...operationsActivities(deps),
    ...decisionActivities(deps),
    ...tenantActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
