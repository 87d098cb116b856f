// Telling the next send of a conversation that its turn has come. Whoever settles a send (its own
// answer, a lookup, a held or failed record) tells the workflow of the earliest send still waiting to
// be told, straight from the activity: one signal, and no task for the workflow that settled.
import { Context } from '@temporalio/activity';
import type { EffectsRepository } from '../src/db/effects';
import { yourTurnSignal } from '../workflows/messages';

/**
 * Tells the next send waiting in the effect's conversation, if one waits. A signal that does not
 * arrive (the workflow is gone, Temporal is unreachable) is not retried: the waiting send checks the
 * order again by itself after a while.
 */
export async function tellNextInLine(effects: EffectsRepository, effectId: string): Promise<void> {
  const next = await effects.nextInLine(effectId);
  if (!next) return;
  await Context.current()
    .client.workflow.getHandle(next)
    .signal(yourTurnSignal)
    .catch(() => {});
}
