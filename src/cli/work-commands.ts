// The commands about held and failed work: find it (`held`, `failed`), understand it (`show`), and
// decide (`resolve`, `approve`, `reprocess`, one workflow or a selection), each through replyflow's
// operator API (src/operator/api.ts), which reads, checks roles and sends the decisions.
import { setTimeout as delay } from 'node:timers/promises';
import { type Command, Option } from 'commander';
import { DECISIONS, RESOLVE_ACTIONS, type ResolveAction } from '../../workflows/messages';
import { accepted, actionOf, type DecisionRequest, validateRequest } from '../operator/decisions';
import { OperatorInputError } from '../operator/errors';
import type { Inspection } from '../operator/inspect';
import type { ItemResult, SelectionItem } from '../operator/selection';
import { quote, type WorkItem } from '../operator/workflows';
import { parseTenant } from '../tenants/tenant-id';
import { type CliContext, EXIT, operatorAction, parseDurationFlag, parseTime } from './command';
import { type CliIo, formatAge, printJson, printLine, progressBar, table } from './io';
import type { Session } from './session';

const jsonOption = () => new Option('--json', 'print JSON instead of a table');
const TENANT_HELP =
  'only work of this tenant: slack:<team or organisation>, line:<bot user id>, github:<installation>';

/** A `--tenant` value, checked to be a tenant id before it goes anywhere. */
function tenantFlag(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!parseTenant(value))
    throw new OperatorInputError(
      `--tenant: not a tenant id (slack:T…, slack:E…, line:U… or github:<installation id>)`,
    );
  return value;
}
const waitOption = () =>
  new Option('--wait <duration>', "how long to wait for the workflow's verdict").default('60s');
const followOption = () =>
  new Option(
    '--follow',
    'after an accepted resend or reprocess, also wait (within --wait) for how the send ends',
  );

export function registerWorkCommands(program: Command, ctx: CliContext): void {
  for (const kind of ['held', 'failed'] as const) {
    program
      .command(kind)
      .description(
        kind === 'held'
          ? 'list held work (outcome unknown) and resends awaiting approval'
          : 'list failed work waiting for reprocess or discard',
      )
      .addOption(jsonOption())
      .option('--integration <name>', 'only this integration')
      .option('--tenant <tenant>', TENANT_HELP)
      .option('--since <time>', 'only events that arrived since (1h, 7d or an ISO time)')
      .option('--include-closed', 'also closed workflows (failed work nobody decided on in time)')
      .action(
        operatorAction(ctx, async (session, opts: ListOptions) => {
          const tenant = tenantFlag(opts.tenant);
          const items = await session.api().work(kind, {
            integration: opts.integration,
            tenant,
            since: opts.since ? parseTime(opts.since, '--since') : undefined,
            includeClosed: opts.includeClosed,
          });
          printWork(ctx.io, kind, items, opts.json);
          return EXIT.ok;
        }),
      );
  }

  program
    .command('show')
    .description("one workflow: its status query, effect rows and audit rows (never the message's text)")
    .argument('<workflowId>')
    .addOption(jsonOption())
    .action(
      operatorAction(ctx, async (session, workflowId: string, opts: { json?: boolean }) => {
        const inspection = await session.api().show(workflowId);
        if (opts.json) printJson(ctx.io.stdout, inspection);
        else printInspection(ctx.io, inspection);
        return EXIT.ok;
      }),
    );

  program
    .command('resolve')
    .description(DECISIONS.resolve.cli)
    .argument('<workflowId>')
    .addOption(new Option('--action <action>', 'what to do').choices(RESOLVE_ACTIONS).makeOptionMandatory())
    .requiredOption('--reason <text>', 'why, for the audit log')
    .option('--external-id <id>', 'with mark-sent: the id the target gave the message that was sent')
    .addOption(waitOption())
    .addOption(followOption())
    .addOption(jsonOption())
    .action(
      operatorAction(ctx, (session, workflowId: string, opts: DecisionOptions & { action: ResolveAction }) =>
        decideOne(ctx.io, session, workflowId, opts, {
          signal: 'resolve',
          action: opts.action,
          reason: opts.reason,
          externalId: opts.externalId,
        }),
      ),
    );

  program
    .command('approve')
    .description(DECISIONS.approve.cli)
    .argument('<workflowId>')
    .requiredOption('--reason <text>', 'why, for the audit log')
    .addOption(waitOption())
    .addOption(followOption())
    .addOption(jsonOption())
    .action(
      operatorAction(ctx, (session, workflowId: string, opts: DecisionOptions) =>
        decideOne(ctx.io, session, workflowId, opts, { signal: 'approve', reason: opts.reason }),
      ),
    );

  program
    .command('reprocess')
    .description(DECISIONS.reprocess.cli)
    .argument('[workflowId]')
    .requiredOption('--reason <text>', 'why, for the audit log')
    .option(
      '--query <filter>',
      'select by a Temporal list filter, e.g. \'ReplyState="failed" AND Integration="slack"\'',
    )
    .option('--integration <name>', 'select failed work of this integration')
    .option('--tenant <tenant>', 'select failed work of this tenant (with --query too: both must match)')
    .option('--since <time>', 'select failed work that arrived since (1h, 7d or an ISO time)')
    .option('--dry-run', 'show what would happen and change nothing')
    .option('--yes', 'do not ask for confirmation')
    .addOption(waitOption())
    .addOption(followOption())
    .addOption(jsonOption())
    .action(
      operatorAction(ctx, (session, workflowId: string | undefined, opts: ReprocessOptions) =>
        workflowId && !selects(opts) && !opts.dryRun
          ? decideOne(ctx.io, session, workflowId, opts, { signal: 'reprocess', reason: opts.reason })
          : reprocessSelection(ctx.io, session, selectionQuery(workflowId, opts), opts),
      ),
    );
}

interface ListOptions {
  json?: boolean;
  integration?: string;
  tenant?: string;
  since?: string;
  includeClosed?: boolean;
}

interface DecisionOptions {
  reason: string;
  wait: string;
  follow?: boolean;
  json?: boolean;
  externalId?: string;
}

interface ReprocessOptions extends DecisionOptions {
  query?: string;
  integration?: string;
  tenant?: string;
  since?: string;
  dryRun?: boolean;
  yes?: boolean;
}

function printWork(io: CliIo, kind: 'held' | 'failed', items: WorkItem[], json?: boolean): void {
  if (json) printJson(io.stdout, items);
  else if (items.length === 0) printLine(io.stdout, `No ${kind} work.`);
  else printWorkTable(io, items);
}

function printWorkTable(io: CliIo, items: WorkItem[]): void {
  printLine(
    io.stdout,
    table(
      [
        'WORKFLOW ID',
        'STATE',
        'INTEGRATION',
        'TENANT',
        'BUSINESS KEY',
        'FAILED STEP',
        'ATTEMPTS',
        'LAST ERROR CLASS',
        'AGE',
        'RECOMMENDED ACTION',
      ],
      items.map((w) => [
        w.workflowId,
        w.execution === 'RUNNING' ? w.state : `${w.state} (${w.execution.toLowerCase()})`,
        w.integration,
        w.tenant,
        w.businessKey,
        w.failedStep,
        w.attempts,
        w.lastErrorClass,
        formatAge(w.ageMs),
        w.recommendedAction,
      ]),
    ),
  );
}

function printInspection(io: CliIo, { workflow, effects, audit }: Inspection): void {
  const s = workflow.status;
  const out = io.stdout;
  printLine(
    out,
    `${workflow.workflowId}  (${workflow.execution.toLowerCase()}, task queue ${workflow.taskQueue})`,
  );
  const fields: [string, unknown][] = [
    ['state', s.state],
    ['tenant', workflow.tenant],
    ['step', s.step],
    ['attempts', s.attempts],
    ...lastErrorFields(s.state, s.lastErrorClass, s.lastError),
    ['recommended action', s.recommendedAction],
    ['business key', s.businessKey],
    ['effect id', s.effectId],
    ['owner workflow', s.ownerWorkflowId],
    ['reason', s.reason],
    ['pending resend', s.pendingResend && `asked by ${s.pendingResend.operator}: ${s.pendingResend.reason}`],
    ['started', `${workflow.startedAt} (${formatAge(Date.now() - Date.parse(workflow.startedAt))} ago)`],
    ['closed', workflow.closedAt],
    ['trace id', workflow.traceId],
  ];
  printLine(
    out,
    table(
      ['FIELD', 'VALUE'],
      fields.filter(([, v]) => v !== undefined && v !== '').map(([k, v]) => [k, String(v)]),
    ),
  );
  printLine(out);
  printLine(out, `Operator history (${s.operatorHistory.length})`);
  if (s.operatorHistory.length > 0)
    printLine(
      out,
      table(
        ['AT', 'ACTION', 'ACTOR', 'RESULT', 'DETAIL', 'REQUEST ID'],
        s.operatorHistory.map((d) => [d.at, d.action, d.actor, d.result, d.detail, d.requestId]),
      ),
    );
  printLine(out);
  printLine(out, `Effects (${effects.length})`);
  if (effects.length > 0)
    printLine(
      out,
      table(
        [
          'EFFECT ID',
          'TARGET',
          'BUSINESS KEY',
          'STATUS',
          'ATTEMPTS',
          'ERROR CLASS',
          'EXTERNAL ID',
          'OWNER',
          'UPDATED',
        ],
        effects.map((e) => [
          e.id,
          e.target,
          e.businessKey,
          e.status,
          e.attempts,
          FINISHED_AS[e.status] ? undefined : e.lastErrorClass,
          e.externalId,
          e.workflowId === workflow.workflowId ? 'this workflow' : e.workflowId,
          e.updatedAt,
        ]),
      ),
    );
  for (const e of effects) {
    const history = errorHistory(e.status, e.lastErrorClass, e.lastError);
    if (history) printLine(out, `  ${e.id}: ${history.join(': ')}`);
  }
  printLine(out);
  printLine(out, `Audit (${audit.length})`);
  if (audit.length > 0) printLine(out, auditTable(audit));
}

/** What a finished workflow or effect did in the end: an error before it is history, not a problem of now. */
const FINISHED_AS: Partial<Record<string, string>> = {
  succeeded: 'it succeeded',
  discarded: 'it was discarded',
};

/**
 * The last error as `show` prints it: its class and summary while the work is unfinished; once it
 * succeeded or was discarded, the one field of {@link errorHistory} (none when there was no error).
 */
function lastErrorFields(
  status: string,
  errorClass: string | null | undefined,
  error: string | null | undefined,
): [string, string | null | undefined][] {
  if (!FINISHED_AS[status])
    return [
      ['last error class', errorClass],
      ['last error', error],
    ];
  const history = errorHistory(status, errorClass, error);
  return history ? [history] : [];
}

/** The error of work that then succeeded or was discarded, as history: `[label, summary]`. */
function errorHistory(
  status: string,
  errorClass: string | null | undefined,
  error: string | null | undefined,
): [string, string] | undefined {
  const finishedAs = FINISHED_AS[status];
  if (!finishedAs || !(errorClass || error)) return undefined;
  return [
    `last error before ${finishedAs}`,
    errorClass && error ? `${errorClass} — ${error}` : (errorClass || error)!,
  ];
}

export function auditTable(rows: Inspection['audit']): string {
  return table(
    ['AT', 'ACTOR', 'APPROVER', 'ACTION', 'TARGET', 'STATE', 'RESULT', 'REASON'],
    rows.map((a) => [
      a.at,
      a.actor,
      a.approver,
      a.action,
      a.target,
      a.stateBefore || a.stateAfter ? `${a.stateBefore ?? '-'} → ${a.stateAfter ?? '-'}` : undefined,
      a.result,
      a.reason,
    ]),
  );
}

async function decideOne(
  io: CliIo,
  session: Session,
  workflowId: string,
  opts: DecisionOptions,
  request: DecisionRequest,
): Promise<number> {
  validateRequest(request);
  const waitMs = parseDurationFlag(opts.wait, '--wait');
  const deadline = Date.now() + waitMs;
  // replyflow checks the token first, so a refused one stops there, before anything is read.
  const outcome = await session.api().decide(workflowId, request, waitMs);
  const { operator } = outcome;
  // The verdict comes first, on its own; what a resend or reprocess then does is followed only when
  // asked, so that the verdict is never held up by the send.
  const following = opts.follow && accepted(outcome) && sendsAgain(outcome.verdict!);
  const then = following ? await followSend(session, workflowId, deadline) : undefined;
  if (opts.json) printJson(io.stdout, then ? { ...outcome, then } : outcome);
  else {
    printLine(io.stdout, `${actionOf(request)} ${workflowId} as ${operator} (update ${outcome.updateId})`);
    printLine(
      io.stdout,
      outcome.verdict ??
        `No verdict within ${formatAge(waitMs)}: the update was sent; check \`replyflow show ${workflowId}\`.`,
    );
    if (then) printLine(io.stdout, thenLine(then, workflowId));
  }
  if (outcome.verdict === undefined) return EXIT.notDone;
  if (!accepted(outcome)) return EXIT.refused;
  return then && then.state !== 'succeeded' ? EXIT.notDone : EXIT.ok;
}

/** Verdicts after which the run sends again: an approved resend, an accepted reprocess. */
function sendsAgain(verdict: string): boolean {
  return verdict === 'Accepted: resend approved' || verdict === 'Accepted: reprocess';
}

/** The states a send settles in: the run stops there, or waits for an operator again. */
const SETTLED_STATES = ['succeeded', 'held', 'failed', 'discarded'];
/** How often `--follow` reads the workflow's state again. */
const FOLLOW_POLL_MS = 500;

interface SendFollowed {
  /** The state the send settled in, or the state it was still in at the deadline. */
  state: string;
  settled: boolean;
  externalId?: string;
  lastErrorClass?: string;
}

/** Reads the workflow's state until the send it started settles, or until the deadline. */
async function followSend(session: Session, workflowId: string, deadline: number): Promise<SendFollowed> {
  for (;;) {
    const { workflow, effects } = await session.api().show(workflowId);
    const { state, lastErrorClass } = workflow.status;
    const settled = SETTLED_STATES.includes(state);
    if (settled || Date.now() + FOLLOW_POLL_MS > deadline) {
      const externalId = effects.filter((e) => e.workflowId === workflowId).at(-1)?.externalId ?? undefined;
      return {
        state,
        settled,
        ...(state === 'succeeded' && externalId ? { externalId } : {}),
        ...(state !== 'succeeded' && lastErrorClass ? { lastErrorClass } : {}),
      };
    }
    await delay(FOLLOW_POLL_MS);
  }
}

function thenLine(then: SendFollowed, workflowId: string): string {
  if (!then.settled)
    return `Then: still ${then.state} at the end of --wait; check \`replyflow show ${workflowId}\`.`;
  if (then.state === 'succeeded') return `Then: sent${then.externalId ? ` (${then.externalId})` : ''}.`;
  const again = then.state === 'held' || then.state === 'failed' ? ' again' : '';
  return `Then: ${then.state}${again}${then.lastErrorClass ? ` (${then.lastErrorClass})` : ''}; see \`replyflow show ${workflowId}\`.`;
}

function selects(opts: ReprocessOptions): boolean {
  return Boolean(opts.query || opts.integration || opts.since || opts.tenant);
}

/** The selection's visibility query: one id (a dry run), `--query` as given, or failed work by integration and time. */
function selectionQuery(workflowId: string | undefined, opts: ReprocessOptions): string {
  if (workflowId && selects(opts))
    throw new OperatorInputError(
      'give one workflow id or a selection (--query, --integration, --tenant, --since), not both',
    );
  if (workflowId) return `WorkflowId = ${quote(workflowId)}`;
  if (!selects(opts))
    throw new OperatorInputError(
      'give a workflow id, or select with --query, --integration, --tenant or --since',
    );
  if (opts.query && (opts.integration || opts.since))
    throw new OperatorInputError('--query already says what to select: leave out --integration and --since');
  if (opts.query) return opts.query;
  const parts = ['ReplyState = "failed"'];
  if (opts.integration) parts.push(`Integration = ${quote(opts.integration)}`);
  if (opts.since) parts.push(`StartTime >= ${quote(parseTime(opts.since, '--since').toISOString())}`);
  return parts.join(' AND ');
}

async function reprocessSelection(
  io: CliIo,
  session: Session,
  query: string,
  opts: ReprocessOptions,
): Promise<number> {
  const reason = opts.reason.trim();
  if (!reason) throw new OperatorInputError('a reason is required (--reason "…")');
  const waitMs = parseDurationFlag(opts.wait, '--wait');
  // Planning needs the view role (replyflow checks it); each item's workflow judges the reprocess itself.
  // The tenant goes apart from the query: replyflow checks it and adds it to the filter itself.
  const { operator, plan } = await session.api().planReprocess(query, reason, tenantFlag(opts.tenant));
  const todo = plan.filter((item) => item.verdict === 'reprocess');
  if (opts.dryRun || todo.length === 0) {
    if (opts.json)
      printJson(io.stdout, { query, tenant: opts.tenant, dryRun: Boolean(opts.dryRun), plan, results: [] });
    else {
      printPlan(io, plan);
      printLine(
        io.stdout,
        `${opts.dryRun ? 'Dry run: ' : ''}${todo.length} would be reprocessed, ${plan.length - todo.length} skipped. Nothing was changed.`,
      );
    }
    return EXIT.ok;
  }
  if (!opts.json) printPlan(io, plan);
  if (!opts.yes && !(await io.confirm(`Reprocess ${todo.length} failed item(s) as ${operator}?`))) {
    printLine(io.stderr, 'replyflow: not confirmed (pass --yes when no one can answer); nothing was changed');
    return EXIT.notDone;
  }
  // One item at a time, each re-checked by replyflow immediately before its update.
  const progress = progressBar(io.stderr, todo.length);
  const results: ItemResult[] = [];
  for (const item of todo) {
    const result = await session.api().reprocessItem(item, reason, waitMs);
    results.push(result);
    progress.clear();
    if (!opts.json) printLine(io.stdout, resultLine(result));
    progress.update(results.length);
  }
  progress.end();
  const count = (r: ItemResult['result']) => results.filter((x) => x.result === r).length;
  if (opts.json) printJson(io.stdout, { query, tenant: opts.tenant, dryRun: false, plan, results });
  else
    printLine(
      io.stdout,
      `Reprocessed ${count('accepted')}, skipped ${count('skipped')}, rejected ${count('rejected')}, undecided ${count('undecided')}.`,
    );
  if (count('rejected') > 0) return EXIT.refused;
  return count('undecided') > 0 ? EXIT.notDone : EXIT.ok;
}

function printPlan(io: CliIo, plan: SelectionItem[]): void {
  if (plan.length === 0) {
    printLine(io.stdout, 'No running workflow matches.');
    return;
  }
  printLine(
    io.stdout,
    table(
      ['WORKFLOW ID', 'INTEGRATION', 'BUSINESS KEY', 'STATE', 'EFFECT', 'PLAN'],
      plan.map((i) => [
        i.workflowId,
        i.integration,
        i.businessKey,
        i.state,
        i.effectStatus,
        i.verdict === 'reprocess' ? 'reprocess' : `skip: ${i.why}`,
      ]),
    ),
  );
}

function resultLine(r: ItemResult): string {
  const detail = r.detail ? `: ${r.detail}` : '';
  const id = r.updateId ? ` [update ${r.updateId}]` : '';
  return `${r.result} ${r.workflowId}${detail}${id}`;
}
