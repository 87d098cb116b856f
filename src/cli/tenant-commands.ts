// The tenants an admin manages by hand: `tenant add|list|rotate|remove` — LINE channels (a destination's
// channel secret and access token) and Slack teams given a bot token by hand. The admin credential
// (src/cli/admin.ts) writes the table, the payload key seals the secrets (as receivers and workers
// open them); every change is an audit row by `admin:<OS user>`. A secret never comes on the command
// line (other users see it in `ps`) and is never printed: it is read from the environment variable an
// option names, or from stdin as one line of JSON. Receivers and workers pick a change up within the
// directory's cache time (src/tenants/directory.ts), without a restart.
import type { Command } from 'commander';
import type { z } from 'zod';
import { TenantCredentialError } from '../db/errors';
import type { Pool } from '../db/pool';
import {
  createTenantCredentialStore,
  REVOKED_RECORD_KEPT_MS,
  type TenantChange,
  type TenantRecord,
} from '../db/tenant-credentials';
import { errorMessage } from '../failures';
import { OperatorInputError } from '../operator/errors';
import { keyring, payloadCodec, resolveEncryptionKey } from '../temporal/client';
import { TENANT_CACHE_MS } from '../tenants/directory';
import { TenantsFileError } from '../tenants/errors';
import { ANNOUNCE_EVERY_MS } from '../tenants/revocation-announcer';
import type { SecretKeys } from '../tenants/secret-box';
import { parseTenant, TENANT_PROVIDERS, type TenantProvider } from '../tenants/tenant-id';
import {
  LINE_DESTINATION,
  LINE_DESTINATION_HELP,
  lineChannelSecret,
  loadTenantsFile,
  SLACK_TEAM,
  SLACK_TEAM_HELP,
  slackTeamSecret,
} from '../tenants/tenants-file';
import { type AdminSession, adminAction } from './admin';
import { type CliContext, EXIT } from './command';
import { type CliIo, printLine, printListing } from './io';

/** Where each provider's secret fields are read from: the option naming their environment variable. */
const SECRET_OPTIONS = {
  line: { channelSecret: 'channelSecretEnv', accessToken: 'accessTokenEnv' },
  slack: { botToken: 'botTokenEnv' },
} as const;
type ManagedProvider = keyof typeof SECRET_OPTIONS;
const SECRET_SCHEMAS = { line: lineChannelSecret, slack: slackTeamSecret } as const;
const FLAG: Record<string, string> = {
  channelSecretEnv: '--channel-secret-env',
  accessTokenEnv: '--access-token-env',
  botTokenEnv: '--bot-token-env',
};

interface SecretOptions {
  channelSecretEnv?: string;
  accessTokenEnv?: string;
  botTokenEnv?: string;
  secretStdin?: boolean;
}
interface ChangeOptions {
  reason?: string;
}

const TENANT_HELP = 'line:<bot user id U…> (a LINE channel) or slack:<team id> (a Slack team)';

function withSecretOptions(command: Command): Command {
  return command
    .option('--channel-secret-env <name>', "LINE: the environment variable holding the channel's secret")
    .option('--access-token-env <name>', "LINE: the environment variable holding the channel's access token")
    .option('--bot-token-env <name>', "Slack: the environment variable holding the team's bot token (xoxb-…)")
    .option(
      '--secret-stdin',
      'read the secret from stdin instead, as one line of JSON: {"channelSecret":…,"accessToken":…} or {"botToken":…}',
    )
    .option('--reason <text>', 'why, for the audit log');
}

export function registerTenantCommands(program: Command, ctx: CliContext): void {
  const tenant = program
    .command('tenant')
    .description(
      'LINE channels and Slack teams with their credentials, for receivers and workers (the admin: needs REPLYFLOW_ADMIN_DATABASE_URL and the payload key)',
    );

  withSecretOptions(
    tenant
      .command('add')
      .description('add a LINE channel or a Slack team with its credential; the secret is never printed')
      .argument('<tenant>', TENANT_HELP)
      .option('--name <text>', 'a name to show in `tenant list` (no secret)'),
  ).action(
    adminAction(ctx, async (admin, name: string, opts: SecretOptions & ChangeOptions & { name?: string }) => {
      const provider = managedProvider(name);
      const store = storeOf(admin, await admin.pool());
      const secret = await secretFrom(ctx.io, provider, opts, 'all');
      const existing = (await store.list(provider)).find((r) => r.tenant === name);
      if (existing && !existing.revokedAt)
        throw new OperatorInputError(
          `${name} exists already (source ${existing.source}): \`replyflow tenant rotate ${name}\` gives it a new credential`,
        );
      const record = await guarded(() =>
        store.put(
          name,
          { source: 'admin', secret, details: opts.name ? { name: opts.name } : {} },
          change(admin, opts),
        ),
      );
      printLine(ctx.io.stdout, `Added ${recordLine(record)}. ${pickedUp(provider)}`);
      shadowedByFile(ctx.io, admin, name);
      return EXIT.ok;
    }),
  );

  tenant
    .command('list')
    .description('every tenant: provider, source, details, expiry, revocation (never a secret)')
    .option('--provider <provider>', `only one provider's: ${TENANT_PROVIDERS.join(', ')}`)
    .option('--json', 'print JSON instead of a table')
    .action(
      adminAction(ctx, async (admin, opts: { provider?: string; json?: boolean }) => {
        const provider = opts.provider;
        if (provider !== undefined && !(TENANT_PROVIDERS as readonly string[]).includes(provider))
          throw new OperatorInputError(`--provider expects one of ${TENANT_PROVIDERS.join(', ')}`);
        const stored = await storeOf(admin, await admin.pool()).list(provider);
        printTenants(ctx.io, [...stored, ...fileRecords(admin, provider)], opts.json);
        return EXIT.ok;
      }),
    );

  withSecretOptions(
    tenant
      .command('rotate')
      .description(
        "give a tenant a new credential (a LINE channel's secret, its access token, or both); the secret is never printed",
      )
      .argument('<tenant>', TENANT_HELP),
  ).action(
    adminAction(ctx, async (admin, name: string, opts: SecretOptions & ChangeOptions) => {
      const provider = managedProvider(name);
      const store = storeOf(admin, await admin.pool());
      const given = await secretFrom(ctx.io, provider, opts, 'some');
      const current = await guarded(() => store.get(name));
      if (!current?.secret)
        throw new OperatorInputError(
          current
            ? `${name} is revoked: add it again (\`replyflow tenant add ${name}\`)`
            : `no tenant ${name}: \`replyflow tenant list\` shows them`,
        );
      // The fields not given keep their value (a LINE access token reissued, its channel secret not).
      const secret = parseSecret(provider, { ...current.secret, ...given });
      const record = await guarded(() =>
        store.rotate(name, secret, change(admin, opts), current.record.version),
      );
      printLine(
        ctx.io.stdout,
        `Rotated ${Object.keys(given).join(' and ')} of ${recordLine(record)}. ${pickedUp(provider)}`,
      );
      shadowedByFile(ctx.io, admin, name);
      return EXIT.ok;
    }),
  );

  tenant
    .command('remove')
    .description(
      'revoke a tenant: its credential is erased, nothing is verified or sent with it again, its held work ends; removing a revoked tenant deletes its record',
    )
    .argument('<tenant>', TENANT_HELP)
    .option('--reason <text>', 'why, for the audit log')
    .action(
      adminAction(ctx, async (admin, name: string, opts: ChangeOptions) => {
        if (!parseTenant(name))
          throw new OperatorInputError(`tenant "${name.slice(0, 80)}": expected ${TENANT_HELP}`);
        const store = storeOf(admin, await admin.pool());
        const done = await guarded(() => store.remove(name, change(admin, opts)));
        printLine(
          ctx.io.stdout,
          done === 'deleted'
            ? `Deleted the record of ${name}.`
            : `Removed ${name}: its credential is erased. Receivers and workers stop using it within ${TENANT_CACHE_MS / 1000} s; its held work ends, discarded, once a receiver has announced the revocation (within ${ANNOUNCE_EVERY_MS / 1000} s). \`replyflow tenant list\` shows it revoked; removing it again after ${REVOKED_RECORD_KEPT_MS / 60_000} minutes deletes the record.`,
        );
        return EXIT.ok;
      }),
    );
}

/** The tenant's provider, if it is one whose credential is given by hand; else a clear refusal. */
function managedProvider(tenant: string): ManagedProvider {
  const parsed = parseTenant(tenant);
  if (!parsed) throw new OperatorInputError(`tenant "${tenant.slice(0, 80)}": expected ${TENANT_HELP}`);
  const { provider, id } = parsed;
  if (provider === 'github')
    throw new OperatorInputError(
      `${tenant}: a GitHub App installation needs no stored credential (its tokens come from the app's key)`,
    );
  if (provider === 'line' && !LINE_DESTINATION.test(id))
    throw new OperatorInputError(`${tenant}: expected line:<${LINE_DESTINATION_HELP}>`);
  if (provider === 'slack' && !SLACK_TEAM.test(id))
    throw new OperatorInputError(`${tenant}: expected slack:<${SLACK_TEAM_HELP}>`);
  return provider;
}

/**
 * The secret the options point at: from the environment variables they name, or from stdin as JSON.
 * `all`: every field of the provider's secret (add); `some`: at least one (rotate).
 */
async function secretFrom(
  io: CliIo,
  provider: ManagedProvider,
  opts: SecretOptions,
  needed: 'all' | 'some',
): Promise<Record<string, string>> {
  const fields = SECRET_OPTIONS[provider];
  const flags = Object.values(fields).map((option) => FLAG[option]!);
  const foreign = Object.keys(FLAG).filter(
    (option) => opts[option as keyof SecretOptions] && !(Object.values(fields) as string[]).includes(option),
  );
  if (foreign.length > 0)
    throw new OperatorInputError(
      `${foreign.map((o) => FLAG[o]).join(', ')} is not for a ${provider} tenant (it takes ${flags.join(' and ')})`,
    );
  const named = Object.entries(fields).filter(([, option]) => opts[option as keyof SecretOptions]);
  if (opts.secretStdin && named.length > 0)
    throw new OperatorInputError(
      `give the secret either with ${flags.join(' and ')} or with --secret-stdin, not both`,
    );
  if (opts.secretStdin) return readStdinSecret(io, provider, needed);
  if (named.length === 0 || (needed === 'all' && named.length < flags.length))
    throw new OperatorInputError(
      `a ${provider} tenant needs ${needed === 'all' ? '' : 'at least one of '}${flags.map((f) => `${f} <variable>`).join(needed === 'all' ? ' and ' : ', ')}, or --secret-stdin (a secret is never given on the command line)`,
    );
  const secret: Record<string, string> = {};
  for (const [field, option] of named) {
    const variable = String(opts[option as keyof SecretOptions]);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(variable))
      throw new OperatorInputError(
        `${FLAG[option]} expects the name of an environment variable, such as LINE_SECRET_B`,
      );
    const value = io.env[variable]?.trim();
    if (!value) throw new OperatorInputError(`${FLAG[option]}: environment variable ${variable} is not set`);
    secret[field] = value;
  }
  return secret;
}

async function readStdinSecret(
  io: CliIo,
  provider: ManagedProvider,
  needed: 'all' | 'some',
): Promise<Record<string, string>> {
  const fields = Object.keys(SECRET_OPTIONS[provider]);
  const line = (await io.readSecret(`${provider} secret as JSON (${fields.join(', ')}): `)).trim();
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new OperatorInputError(
      `--secret-stdin: stdin is not one line of JSON such as {${fields.map((f) => `"${f}":"…"`).join(',')}}`,
    );
  }
  const schema = SECRET_SCHEMAS[provider];
  const parsed = (needed === 'all' ? schema : schema.partial()).strict().safeParse(value);
  // zod's issues name keys and expectations, never the values given.
  if (!parsed.success || Object.keys(parsed.data).length === 0)
    throw new OperatorInputError(
      `--secret-stdin: expected ${needed === 'all' ? '' : 'some of '}{${fields.map((f) => `"${f}":"…"`).join(',')}}${parsed.success ? '' : ` (${parsed.error.issues.map((i) => `${i.path.join('.') || '(object)'}: ${i.message}`).join('; ')})`}`,
    );
  return parsed.data as Record<string, string>;
}

function parseSecret(provider: ManagedProvider, secret: Record<string, string>): Record<string, string> {
  const parsed = (SECRET_SCHEMAS[provider] as z.ZodType<Record<string, string>>).safeParse(secret);
  if (!parsed.success)
    throw new OperatorInputError(
      `the stored credential lacks ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}: give every field`,
    );
  return parsed.data;
}

/**
 * The store as the admin uses it, sealing with the payload key receivers and workers open with:
 * REPLYFLOW_ENCRYPTION_KEY, or beside `replyflow start` the data dir's key file. Looked for only
 * when a secret is sealed or opened, so `list` and `remove` work without it.
 */
function storeOf(admin: AdminSession, pool: Pool) {
  let keys: SecretKeys | undefined;
  const resolved = (): SecretKeys => {
    try {
      keys ??= payloadCodec(resolveEncryptionKey(admin.config), keyring(admin.config));
    } catch (err) {
      throw new OperatorInputError(
        `tenant credentials are sealed under the payload key receivers and workers run with: ${errorMessage(err)}`,
      );
    }
    return keys;
  };
  return createTenantCredentialStore(pool, {
    get currentKey() {
      return resolved().currentKey;
    },
    get keys() {
      return resolved().keys;
    },
  });
}

/** The store's refusals (unknown tenant, unopenable secret) are bad input: nothing was changed. */
async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof TenantCredentialError || (err as Error)?.name === 'TenantSecretError')
      throw new OperatorInputError(errorMessage(err));
    throw err;
  }
}

function change(admin: AdminSession, opts: ChangeOptions): TenantChange {
  return { by: admin.actor, reason: opts.reason?.trim() || undefined };
}

/** TENANTS_FILE's entries, when the admin's environment names the file: listed, never opened. */
function fileRecords(admin: AdminSession, provider?: string): TenantRecord[] {
  const file = admin.config.TENANTS_FILE;
  if (!file) return [];
  let entries: TenantRecord[];
  try {
    entries = [...loadTenantsFile(file).entries.values()].map((entry) => entry.record);
  } catch (err) {
    if (err instanceof TenantsFileError) throw new OperatorInputError(err.message);
    throw err;
  }
  return entries.filter((record) => provider === undefined || record.provider === provider);
}

/** Said after a change to a tenant that TENANTS_FILE lists too: the file's entry answers first. */
function shadowedByFile(io: CliIo, admin: AdminSession, tenant: string): void {
  if (fileRecords(admin).some((record) => record.tenant === tenant))
    printLine(
      io.stderr,
      `replyflow: TENANTS_FILE lists ${tenant} too, and its entry answers first: remove it there (and restart) for this one to count`,
    );
}

function pickedUp(provider: TenantProvider): string {
  const within = `Receivers and workers use it within ${TENANT_CACHE_MS / 1000} s, without a restart`;
  return provider === 'line' ? `${within}, when they run with LINE_CHANNELS=tenants.` : `${within}.`;
}

function recordLine(record: TenantRecord): string {
  const name = typeof record.details.name === 'string' ? ` "${record.details.name}"` : '';
  return `${record.tenant}${name} (source ${record.source})`;
}

function printTenants(io: CliIo, records: TenantRecord[], json?: boolean): void {
  const rows = records.map((r) => ({
    tenant: r.tenant,
    provider: r.provider,
    source: r.source,
    details: r.details,
    expiresAt: r.expiresAt?.toISOString() ?? null,
    revokedAt: r.revokedAt?.toISOString() ?? null,
    revokedReason: r.revokedReason ?? null,
    updatedAt: r.updatedAt.toISOString(),
  }));
  printListing(io, rows, {
    json,
    empty: 'No tenants yet: `replyflow tenant add <tenant> …`, or TENANTS_FILE.',
    columns: [
      ['TENANT', (r) => r.tenant],
      ['PROVIDER', (r) => r.provider],
      ['SOURCE', (r) => r.source],
      ['DETAILS', (r) => (Object.keys(r.details).length > 0 ? JSON.stringify(r.details) : undefined)],
      ['EXPIRES', (r) => r.expiresAt],
      [
        'REVOKED',
        (r) => (r.revokedAt ? `${r.revokedAt}${r.revokedReason ? ` (${r.revokedReason})` : ''}` : undefined),
      ],
    ],
  });
}
