// Operators for tests: real accounts in PostgreSQL, and decisions sealed as the codec server seals them
// (the tests hold the payload key, as the codec server does). Attack tests use `sealFor` with a wrong
// key, workflow or time to forge, misroute or age a decision.

import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { createOperatorStore, type OperatorAccount, type OperatorStore } from '../../src/db/operators';
import { sealDecision } from '../../src/decision-seal';
import type { OperatorRole } from '../../src/model';
import { updateVerdict } from '../../src/operator/decisions';
import {
  approveUpdate,
  type DecisionInput,
  type DecisionName,
  reprocessUpdate,
  resolveUpdate,
  statusQuery,
} from '../../workflows/messages';
import { database, TEST_ENCRYPTION_KEY } from './servers';
import { uniqueId } from './system';

export interface TestOperator {
  account: OperatorAccount;
  token: string;
}

/** The operators table as the admin changes it (the application role may only read it). */
export async function operatorAdmin(): Promise<OperatorStore> {
  return createOperatorStore((await database()).adminPool);
}

/** A new operator account with `roles` (and `view`), unique to this test run. */
export async function testOperator(
  roles: readonly OperatorRole[],
  name = uniqueId('op-'),
): Promise<TestOperator> {
  return (await operatorAdmin()).add(name, roles, { by: 'test' });
}

/** Operators who may do everything but approve, and one who may only approve: the two-person rule. */
export async function twoOperators(): Promise<{ asker: TestOperator; approver: TestOperator }> {
  const [asker, approver] = await Promise.all([
    testOperator(['resend', 'mark-sent', 'discard', 'reprocess']),
    testOperator(['approve']),
  ]);
  return { asker, approver };
}

interface SealOptions {
  issuedAt?: number;
  requestId?: string;
  /** Another key (base64), to forge. */
  key?: string;
  /** Another workflow to bind it to than the body's. */
  sealedFor?: string;
  /** The decision it is sealed as (default: `resolve` with an action, else `approve`). */
  decision?: DecisionName;
  /** The hold it answers (default: one no workflow has, for decisions refused before that matters). */
  hold?: string;
}

/** `body` for `workflowId`, sealed for `operator` as the codec server would. */
export function sealFor(
  operator: OperatorAccount,
  body: Omit<DecisionInput, 'seal'>,
  options: SealOptions = {},
): DecisionInput {
  return sealDecision(
    body as unknown as Record<string, unknown>,
    {
      operator: operator.name,
      credentialId: operator.credentialId,
      workflowId: options.sealedFor ?? body.workflowId,
      decision: options.decision ?? body.decision ?? (body.action ? 'resolve' : 'approve'),
      hold: options.hold ?? body.hold ?? 'unbound:0',
      requestId: options.requestId ?? randomUUID(),
      issuedAt: options.issuedAt ?? Date.now(),
    },
    { id: 'default', payloadKey: Buffer.from(options.key ?? TEST_ENCRYPTION_KEY, 'base64') },
  ) as unknown as DecisionInput;
}

const UPDATES = { resolve: resolveUpdate, approve: approveUpdate, reprocess: reprocessUpdate };

/**
 * Executes a sealed decision as an update, bound (as the codec server binds it) to the hold the
 * workflow shows now, or to `hold` (for a decision sent while the workflow cannot answer a query):
 * @returns the workflow's verdict (`Accepted: …` / `Rejected: …`).
 */
export async function decide(
  handle: WorkflowHandle,
  operator: TestOperator,
  decision: DecisionName,
  body: Omit<DecisionInput, 'seal' | 'workflowId'>,
  hold?: string,
): Promise<string> {
  hold ??= (await handle.query(statusQuery)).hold;
  const sealed = sealFor(operator.account, { ...body, workflowId: handle.workflowId }, { decision, hold });
  return updateVerdict(handle.executeUpdate(UPDATES[decision], { args: [sealed] }));
}

let staff: Promise<{ asker: TestOperator; approver: TestOperator }> | undefined;

/** One pair of operators for the whole run, for tests that are not about who decides. */
export function staffOperators(): Promise<{ asker: TestOperator; approver: TestOperator }> {
  staff ??= twoOperators();
  return staff;
}

/** A decision by the run's operator who may do everything but approve. @returns the verdict. */
export async function operatorDecides(
  handle: WorkflowHandle,
  decision: DecisionName,
  body: Omit<DecisionInput, 'seal' | 'workflowId'>,
  hold?: string,
): Promise<string> {
  return decide(handle, (await staffOperators()).asker, decision, body, hold);
}

/** The run's second operator approves the pending resend. @returns the verdict. */
export async function secondOperatorApproves(handle: WorkflowHandle, reason: string): Promise<string> {
  return decide(handle, (await staffOperators()).approver, 'approve', { reason });
}
