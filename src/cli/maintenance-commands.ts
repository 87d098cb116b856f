// The commands about the system as a whole: `reconcile` (do the ledger, the effects and Temporal agree),
// `patches` (how many open runs still need each patch's old path),
// `audit` (who decided what), `conversation` (hand-off, hand-back, close, reopen), each through
// replyflow's operator API, and `purge` (retention), the admin's, on the database (src/cli/admin.ts).
import { Argument, type Command, Option } from 'commander';
import { recordAction } from '../operator/audit';
import type { ConversationAction } from '../operator/conversations';
import { OperatorInputError } from '../operator/errors';
import type { PatchReport } from '../operator/patches';
import { checkPurgeWindow, purge } from '../operator/purge';
import type { ReconcileReport } from '../operator/reconcile';
import { adminAction } from './admin';
import { type CliContext, EXIT, operatorAction, parseDurationFlag, parseTime } from './command';
import { type CliIo, formatAge, printJson, printLine, table } from './io';
import { auditTable } from './work-commands';

const jsonOption = () => new Option('--json', 'print JSON instead of text');

export function registerMaintenanceCommands(program: Command, ctx: CliContext): void {
  program
    .command('reconcile')
    .description('compare the event ledger, the effects table and Temporal; exit 1 when something is off')
    .option(
      '--grace <duration>',
      'running work older than this without an outcome is reported (default: SEND_MAX_ELAPSED + 1h)',
    )
    .addOption(jsonOption())
    .action(
      operatorAction(ctx, async (session, opts: { grace?: string; json?: boolean }) => {
        // Unset, replyflow's own SEND_MAX_ELAPSED + 1h: the receiver knows its workers' budget.
        const graceMs = opts.grace ? parseDurationFlag(opts.grace, '--grace') : undefined;
        const report = await session.api().reconcile(graceMs);
        if (opts.json) printJson(ctx.io.stdout, report);
        else printReconcile(ctx.io, report);
        return report.consistent ? EXIT.ok : EXIT.notDone;
      }),
    );

  program
    .command('patches')
    .description(
      'how many open runs recorded each workflow patch, and how many may still need its old path (docs/deploy.md)',
    )
    .option('--task-queue <name>', 'only runs on this task queue (default: every queue of the namespace)')
    .addOption(jsonOption())
    .action(
      operatorAction(ctx, async (session, opts: { taskQueue?: string; json?: boolean }) => {
        const report = await session.api().patches(opts.taskQueue);
        if (opts.json) printJson(ctx.io.stdout, report);
        else printPatches(ctx.io, report);
        return EXIT.ok;
      }),
    );

  program
    .command('audit')
    .description('the audit log: every operator decision, accepted or refused')
    .option('--workflow <id>', 'only rows about this workflow (or conversation:<key>)')
    .option('--actor <name>', 'only rows by this operator')
    .option('--since <time>', 'from (1h, 7d or an ISO time)')
    .option('--until <time>', 'before (1h, 7d or an ISO time)')
    .option('--limit <n>', 'at most this many rows, the newest', '1000')
    .addOption(jsonOption())
    .action(
      operatorAction(ctx, async (session, opts: AuditOptions) => {
        const limit = Number(opts.limit);
        if (!Number.isInteger(limit) || limit < 1)
          throw new OperatorInputError('--limit expects a positive whole number');
        const rows = await session.api().audit({
          workflowId: opts.workflow,
          actor: opts.actor,
          since: opts.since ? parseTime(opts.since, '--since') : undefined,
          until: opts.until ? parseTime(opts.until, '--until') : undefined,
          limit,
        });
        if (opts.json) printJson(ctx.io.stdout, rows);
        else printLine(ctx.io.stdout, rows.length > 0 ? auditTable(rows) : 'No audit rows match.');
        return EXIT.ok;
      }),
    );

  program
    .command('conversation')
    .description('move a conversation by hand: handoff to a person, handback to the bot, close, reopen')
    .addArgument(new Argument('<action>', 'what to do').choices(['handoff', 'handback', 'close', 'reopen']))
    .argument('<conversationKey>', '<provider>:<conversation id>, e.g. slack:C123:1712345678.000200')
    .requiredOption('--reason <text>', 'why, for the audit log')
    .addOption(jsonOption())
    .action(
      operatorAction(
        ctx,
        async (
          session,
          action: ConversationAction,
          conversationKey: string,
          opts: { reason: string; json?: boolean },
        ) => {
          if (!opts.reason.trim()) throw new OperatorInputError('a reason is required (--reason "…")');
          const outcome = await session.api().conversation(action, conversationKey, opts.reason);
          if (opts.json) printJson(ctx.io.stdout, outcome);
          else
            printLine(
              ctx.io.stdout,
              outcome.ok
                ? `${action} ${conversationKey}: ${outcome.from} → ${outcome.to}.`
                : `Rejected: ${outcome.detail}.`,
            );
          return outcome.ok ? EXIT.ok : EXIT.notDone;
        },
      ),
    );

  program
    .command('purge')
    .description(
      'drop payload references and ciphertext older than a window (at least 3d); keep ids and outcomes (the admin)',
    )
    .requiredOption('--older-than <duration>', 'e.g. 30d; shorter than 3d is refused')
    .option('--reason <text>', 'why, for the audit log', 'retention')
    .option('--dry-run', 'count what would be purged and change nothing')
    .addOption(jsonOption())
    .action(
      // The admin's: dropping what the ledger holds of messages is retention policy, not an operator's
      // decision, and the application role could not audit it as a purge (migration 010).
      adminAction(ctx, async (admin, opts: PurgeOptions) => {
        const olderThanMs = parseDurationFlag(opts.olderThan, '--older-than');
        checkPurgeWindow(olderThanMs);
        const pool = await admin.pool();
        const report = await purge(pool, { olderThanMs, dryRun: Boolean(opts.dryRun) });
        if (!report.dryRun) {
          await recordAction(pool, {
            actor: admin.actor,
            action: 'purge',
            target: 'ledger',
            reason: opts.reason,
            result: `accepted: payloads of ${report.events} events and ${report.sandboxMessages} sandbox messages before ${report.cutoff}`,
          });
        }
        if (opts.json) printJson(ctx.io.stdout, report);
        else
          printLine(
            ctx.io.stdout,
            `${report.dryRun ? 'Would purge' : 'Purged'} the payloads of ${report.events} events and the text of ${report.sandboxMessages} sandbox messages received before ${report.cutoff}.${report.dryRun ? ' Nothing was changed.' : ''}`,
          );
        return EXIT.ok;
      }),
    );
}

interface AuditOptions {
  workflow?: string;
  actor?: string;
  since?: string;
  until?: string;
  limit: string;
  json?: boolean;
}

interface PurgeOptions {
  olderThan: string;
  reason: string;
  dryRun?: boolean;
  json?: boolean;
}

function printPatches(io: CliIo, report: PatchReport): void {
  const where = report.taskQueue ? ` on task queue ${report.taskQueue}` : '';
  printLine(io.stdout, `${report.openRuns} open event runs${where} at ${report.checkedAt}.`);
  printLine(
    io.stdout,
    table(
      ['PATCH', 'ADDED', 'NEW RUNS', 'RECORDED', 'OPEN BEFORE CUTOFF', 'MAY NEED OLD PATH'],
      report.patches.map((p) => [
        p.id,
        `${p.added.date} ${p.added.commit}`,
        p.deprecated ? 'deprecated' : p.recordedByNewRuns ? 'record it' : 'superseded',
        p.recorded,
        `${p.startedBefore} (started before ${p.cutoff})`,
        p.mayNeedOldPath,
      ]),
    ),
  );
  printLine(
    io.stdout,
    "A patch's old path can go (docs/deploy.md) once MAY NEED OLD PATH is 0 on every namespace that runs replyflow.",
  );
}

function printReconcile(io: CliIo, report: ReconcileReport): void {
  const out = io.stdout;
  printLine(
    out,
    `Reconciled at ${report.checkedAt} (retention ${formatAge(report.retentionMs)}, grace ${formatAge(report.graceMs)}).`,
  );
  const section = (title: string, header: string[], rows: (string | null | undefined)[][]) => {
    printLine(out, `${title}: ${rows.length}`);
    if (rows.length > 0) printLine(out, indent(table(header, rows)));
  };
  section(
    'acknowledged events without a workflow',
    ['PROVIDER', 'EVENT ID', 'WORKFLOW ID', 'RECEIVED'],
    report.ackedWithoutWorkflow.map((e) => [e.provider, e.eventId, e.workflowId, e.receivedAt]),
  );
  section(
    'sends past their lease',
    ['EFFECT ID', 'WORKFLOW ID', 'BUSINESS KEY', 'LEASE EXPIRED'],
    report.expiredLeases.map((e) => [e.effectId, e.workflowId, e.businessKey, e.leaseExpiresAt]),
  );
  section(
    'held without an alert',
    ['WORKFLOW ID', 'BUSINESS KEY'],
    report.heldWithoutAlert.map((h) => [h.workflowId, h.businessKey]),
  );
  section(
    'held with no workflow waiting (terminated or cancelled)',
    ['EFFECT ID', 'WORKFLOW ID', 'BUSINESS KEY', 'STATUS'],
    report.unwatchedHolds.map((h) => [h.effectId, h.workflowId, h.businessKey, h.status]),
  );
  section(
    'events without an outcome',
    ['PROVIDER', 'EVENT ID', 'WORKFLOW ID', 'RECEIVED', 'WHY'],
    report.noOutcome.map((e) => [e.provider, e.eventId, e.workflowId, e.receivedAt, e.why]),
  );
  printLine(
    out,
    `awaiting an operator: ${report.awaitingOperator.held} held, ${report.awaitingOperator.failed} failed (replyflow held / failed)`,
  );
  printLine(out, report.consistent ? 'Everything adds up.' : 'Something is off: see the lists above.');
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}
