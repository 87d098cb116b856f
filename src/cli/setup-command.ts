// `replyflow setup`: what the admin runs before receivers and workers start, and again after each
// upgrade or payload key change (docker compose's `replyflow-setup` job, a deploy pipeline, or by hand):
// migrate the schema as its owner, give the application role its privileges, and register the seal keys
// of exactly the payload keys the deployment runs with (docs/deploy.md, "Database roles").
import type { Command } from 'commander';
import { setUpDatabase } from '../db/setup';
import { APPLICATION_ROLE } from '../embedded/postgres';
import { errorMessage } from '../failures';
import { OperatorInputError } from '../operator/errors';
import { keyring, payloadCodec, resolveEncryptionKey } from '../temporal/client';
import { type AdminSession, adminAction } from './admin';
import { type CliContext, EXIT } from './command';
import { printLine } from './io';

export function registerSetupCommand(program: Command, ctx: CliContext): void {
  program
    .command('setup')
    .description(
      "the admin's setup of replyflow's database: migrate, set the application role's privileges, register the payload keys' seal keys",
    )
    .option('--app-role <name>', 'the database role receivers and workers connect as', APPLICATION_ROLE)
    .action(
      adminAction(ctx, async (admin, opts: { appRole: string }) => {
        const payloadKeys = payloadKeysOf(admin);
        const report = await setUpDatabase(await admin.pool(), { appRole: opts.appRole, payloadKeys });
        const out = ctx.io.stdout;
        printLine(
          out,
          report.migrated.length > 0
            ? `Migrated: ${report.migrated.join(', ')}.`
            : 'The schema is up to date.',
        );
        printLine(
          out,
          `Role ${opts.appRole} (receivers and workers): reads and writes the event tables, only reads operators, only adds used decisions and audit rows, no seal keys, owns nothing.`,
        );
        const { registered, retired } = report.sealKeys!;
        printLine(out, `Seals of payload key(s) ${registered.join(', ')} verify in the database.`);
        if (retired.length > 0)
          printLine(out, `No longer accepted: seals of key(s) ${retired.join(', ')} (not in the keyring).`);
        return EXIT.ok;
      }),
    );
}

/** The keyring receivers and workers run with: REPLYFLOW_ENCRYPTION_KEY (or the data dir's) and REPLYFLOW_DECRYPTION_KEYS. */
function payloadKeysOf(admin: AdminSession): Record<string, Buffer> {
  try {
    return payloadCodec(resolveEncryptionKey(admin.config), keyring(admin.config)).keys;
  } catch (err) {
    throw new OperatorInputError(
      `setup registers the seal keys of the payload keys, and needs them: ${errorMessage(err)}`,
    );
  }
}
