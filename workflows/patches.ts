// Every patch the event workflow asks (`patched()`, and `deprecatePatch()` once one is retiring): its
// id, the release that added it, the code path it guards, and what retiring it takes. The workflow
// asks by these constants, never by a string of its own; test/unit/patches.test.ts holds the
// registry, the call sites and the recorded histories (test/histories) together, and docs/deploy.md
// ("Patches and the runs that need them") says how a patch is retired, and how to count the open
// runs that still need one.

/** The main-path bookkeeping (ledger, plan, transition, claim, outcome) as local activities. */
export const LOCAL_BOOKKEEPING = 'local-bookkeeping';
/** Decision signals verified like updates (sealed), instead of queued unverified. */
export const SEALED_DECISIONS = 'sealed-decisions';
/** One local admission, the built-in responder in the task, order kept by the effects table. */
export const ONE_TASK_SENDS = 'one-task-sends';
/** The same, and the send a local activity: the happy path is one workflow task. */
export const LOCAL_SENDS = 'local-sends';
/** An effect row found held, failed or discarded at the claim is taken at its word. */
export const ADOPT_EFFECT_ROW = 'adopt-effect-row';
/** Unsealable decisions refused without an activity, audited in batches; a long wait continues as new. */
export const CHEAP_REFUSALS = 'cheap-refusals';
/** A plan a route cannot map parks as failed at step planEffects (before, the workflow failed). */
export const PLAN_FAILED_PARKS = 'plan-failed-parks';
/** Everything LOCAL_SENDS implies, and PLAN_FAILED_PARKS decided at the start. */
export const PLAN_FAILED_PARKS_AT_START = 'plan-failed-parks-at-start';
/** Held work of a revoked tenant ends by itself, discarded, once told and once the store confirms. */
export const REVOKED_TENANT_ENDS_HELD = 'revoked-tenant-ends-held';
/** A decision that sends again ends its workflow task (a 1 ms timer) before the send. */
export const VERDICT_BEFORE_SEND = 'verdict-before-send';
/** The same, the send a regular activity task instead of after the timer. */
export const RESEND_AS_TASK = 'resend-as-task';

/**
 * A set of recorded histories (test/histories): `vN` the files `vN-*.json`, the runs of the release
 * they were recorded with; `current` the unprefixed files, what the code records now
 * (npm run record-histories).
 */
export type HistorySet = `v${number}` | 'current';

export interface PatchEntry {
  id: string;
  /** The commit that added the patch, and its date (the package version stays 0.1.0). */
  added: { commit: string; date: string };
  /**
   * Set when the patch is being retired (docs/deploy.md, step 1): the workflow asks it by
   * `deprecatePatch()`, and the path without it is gone.
   */
  deprecated?: { commit: string; date: string };
  /** The code path `patched()` true selects, where it is asked, and what runs without it do. */
  guards: string;
  /**
   * Whether new runs still record it. `superseded`: a newer patch implies it, new runs record that
   * one instead and ask this one only when the newer answered false (runs started before the newer).
   */
  recordedByNewRuns: boolean;
  /** What retiring it takes and removes (docs/deploy.md), beyond no open run started before it. */
  retiring: string;
  /**
   * The history sets whose runs record it: every set listed has a file that records it, and no file
   * outside them does. The sets before the first listed replay the path without it.
   */
  histories: readonly HistorySet[];
}

/** Oldest first. None is deprecated yet: every release's runs still finish (docs/deploy.md). */
export const PATCHES: readonly PatchEntry[] = [
  {
    id: LOCAL_BOOKKEEPING,
    added: { commit: 'fc8e970', date: '2026-11-30' },
    guards:
      'workflows/activity-stubs.ts mainPathRecords: the ledger, plan, transition, claim and outcome as local activities; without it, regular activity tasks. Asked only when one-task-sends is not recorded.',
    recordedByNewRuns: false,
    retiring:
      'superseded by one-task-sends; with it goes the regular-task bookkeeping of mainPathRecords (the v1 histories)',
    histories: ['v2', 'v3'],
  },
  {
    id: SEALED_DECISIONS,
    added: { commit: 'f23cb86', date: '2026-11-30' },
    guards:
      'workflows/handle-event.ts, each decision signal: verified like an update (OperatorDesk.decide); without it, queued unverified (OperatorDesk.receiveUnsealed, workflows/operator.ts unsealedSignal). Asked when a decision signal arrives.',
    recordedByNewRuns: true,
    retiring:
      'removes receiveUnsealed and unsealedSignal; the signals themselves stay (the contract keeps them for runs started before the updates)',
    histories: ['v3', 'v4', 'v5', 'v6', 'v7', 'v8', 'v9', 'current'],
  },
  {
    id: ONE_TASK_SENDS,
    added: { commit: 'e7554aa', date: '2026-11-30' },
    guards:
      'workflows/handle-event.ts at the start: one admission (activities/admit.ts), the conversation order kept by the effects table (ConversationLine), the send an activity task; without it, recordEvent/planEffects/applyTransition one by one and a turns workflow per conversation (TurnClient, workflows/conversation.ts). Asked only when local-sends is not recorded.',
    recordedByNewRuns: false,
    retiring:
      'superseded by local-sends; with it go TurnClient, the turns workflow and the `turns` send path (the v1-v3 histories)',
    histories: ['v4'],
  },
  {
    id: LOCAL_SENDS,
    added: { commit: 'c3469d1', date: '2026-11-30' },
    guards:
      'workflows/handle-event.ts at the start: the send a local activity (send path `local`), the last send recording the outcome; without it, the send an activity task (`one-task`). Asked only when plan-failed-parks-at-start is not recorded.',
    recordedByNewRuns: false,
    retiring:
      'superseded by plan-failed-parks-at-start; with it goes the `one-task` send path (the v4 histories)',
    histories: ['v5', 'v6'],
  },
  {
    id: ADOPT_EFFECT_ROW,
    added: { commit: '5b4a888', date: '2026-12-01' },
    guards:
      'workflows/effect-attempt.ts: a claimed row already held, failed or discarded (a run a reset replaced left it so) is adopted, not sent again; a spent retry budget on a held row stays unknown. Asked only when the row says so.',
    recordedByNewRuns: true,
    retiring: 'removes the send-again of an adopted row, which no run started since can take',
    histories: ['v6', 'v7', 'v8', 'v9', 'current'],
  },
  {
    id: CHEAP_REFUSALS,
    added: { commit: '7373c97', date: '2026-12-01' },
    guards:
      'workflows/operator-desk.ts decide and continueAllowed: an unsealable decision refused without the seal check activity, audited in batches; a wait whose history is long continues as new. Asked when such a decision arrives or the history gets long.',
    recordedByNewRuns: true,
    retiring:
      'removes the seal-check activity for unsealable payloads and the wait that never continues as new',
    histories: ['v6', 'v7', 'v8', 'v9', 'current'],
  },
  {
    id: PLAN_FAILED_PARKS,
    added: { commit: 'f8634fb', date: '2026-12-01' },
    guards:
      'workflows/handle-event.ts admit: a route mapping failure parks as failed at step planEffects; without it, the workflow fails. Asked after the failed admission, only when plan-failed-parks-at-start is not recorded.',
    recordedByNewRuns: false,
    retiring:
      'superseded by plan-failed-parks-at-start (asking it after a local activity could not always replay); with it goes the failing admission of runs before it',
    histories: ['v6'],
  },
  {
    id: PLAN_FAILED_PARKS_AT_START,
    added: { commit: 'f8e80eb', date: '2026-12-01' },
    guards:
      'workflows/handle-event.ts, the first thing every run asks: implies local-sends (and so one-task-sends) and plan-failed-parks, decided at the start. Runs without it ask local-sends, one-task-sends and local-bookkeeping in turn.',
    recordedByNewRuns: true,
    retiring:
      'only after local-sends, one-task-sends and plan-failed-parks are gone; then new runs would record no start marker at all',
    histories: ['v7', 'v8', 'v9', 'current'],
  },
  {
    id: REVOKED_TENANT_ENDS_HELD,
    added: { commit: 'b481a6a', date: '2026-12-02' },
    guards:
      'workflows/operator-desk.ts endIfRevoked: held work of a revoked tenant ends discarded once the store confirms; without it, it waits for an operator. Asked when the tenantRevoked signal arrives.',
    recordedByNewRuns: true,
    retiring: 'removes the wait on after a revocation signal, which only runs started before it take',
    histories: ['v8', 'v9', 'current'],
  },
  {
    id: VERDICT_BEFORE_SEND,
    added: { commit: '7d58f92', date: '2026-12-02' },
    guards:
      'workflows/operator-desk.ts awaitDecision: a 1 ms timer ends the workflow task between an accepted resend or reprocess and its send; without it, the send runs in the same task. Asked only when resend-as-task answered false.',
    recordedByNewRuns: false,
    retiring: 'superseded by resend-as-task; with it goes the 1 ms timer (the v9 histories)',
    histories: ['v9'],
  },
  {
    id: RESEND_AS_TASK,
    added: { commit: '380a59f', date: '2026-12-02' },
    guards:
      'workflows/operator-desk.ts awaitDecision, and the admission and send a decision starts: a regular activity task (`asTask`), whose scheduling ends the task before the send. Asked when a decision that sends again is accepted.',
    recordedByNewRuns: true,
    retiring:
      'only after verdict-before-send is gone; removes the local send (and local admission) after an accepted decision',
    histories: ['current'],
  },
];
