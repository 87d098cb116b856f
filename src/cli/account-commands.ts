// The commands about operator accounts: `operator add|list|disable|enable|rotate|roles|tenants` for the admin
// (whoever holds the admin credential, src/cli/admin.ts), and `login`/`logout` for an operator storing
// their own token for the CLI.
import type { Command } from 'commander';
import {
  type AccountChange,
  createOperatorStore,
  type OperatorAccount,
  tenantsInWords,
} from '../db/operators';
import { OPERATOR_ROLES } from '../model';
import { OperatorInputError } from '../operator/errors';
import { type AdminSession, adminAction } from './admin';
import { type CliContext, EXIT, operatorAction } from './command';
import { type CliIo, printLine, printListing } from './io';
import { removeToken, storeToken, tokenFile } from './operator-token';

const ROLES_HELP = `comma-separated, from ${OPERATOR_ROLES.join(', ')} (every operator may view)`;
const TENANTS_HELP =
  'comma-separated tenant ids (slack:T…, slack:E…, line:U…, github:<installation>): the operator sees and decides only their work';

export function registerAccountCommands(program: Command, ctx: CliContext): void {
  const operator = program
    .command('operator')
    .description(
      'operator accounts: each has roles and one token (the admin: needs REPLYFLOW_ADMIN_DATABASE_URL, or the user of the running `replyflow start`)',
    );

  operator
    .command('add')
    .description('create an operator; prints the token once')
    .argument('<name>', 'lower-case letters, digits, ".", "_" or "-"')
    .requiredOption('--roles <roles>', ROLES_HELP)
    .option('--tenants <tenants>', `${TENANTS_HELP} (default: every tenant)`)
    .option('--reason <text>', 'why, for the audit log')
    .action(
      adminAction(
        ctx,
        async (admin, name: string, opts: ChangeOptions & { roles: string; tenants?: string }) => {
          const { account, token } = await (await store(admin)).add(
            name,
            roleList(opts.roles),
            change(admin, opts),
            opts.tenants === undefined ? null : tenantList(opts.tenants),
          );
          printLine(ctx.io.stdout, `Added ${accountLine(account)}. Its token, shown this once:`);
          printLine(ctx.io.stdout, `token: ${token}`);
          return EXIT.ok;
        },
      ),
    );

  operator
    .command('list')
    .description('every operator, its roles and whether it is enabled')
    .option('--json', 'print JSON instead of a table')
    .action(
      adminAction(ctx, async (admin, opts: { json?: boolean }) => {
        printAccounts(ctx.io, await (await store(admin)).list(), opts.json);
        return EXIT.ok;
      }),
    );

  for (const [command, description] of [
    ['disable', 'revoke an operator now: its token, browser sessions and sealed decisions stop counting'],
    ['enable', 'let a disabled operator act again, with the same token'],
  ] as const) {
    operator
      .command(command)
      .description(description)
      .argument('<name>')
      .option('--reason <text>', 'why, for the audit log')
      .action(
        adminAction(ctx, async (admin, name: string, opts: ChangeOptions) => {
          const account = await (await store(admin))[command](name, change(admin, opts));
          printLine(
            ctx.io.stdout,
            `${command === 'disable' ? 'Disabled' : 'Enabled'} ${accountLine(account)}.`,
          );
          return EXIT.ok;
        }),
      );
  }

  operator
    .command('rotate')
    .description('give an operator a new token; the old one and everything sealed with it stop counting')
    .argument('<name>')
    .option('--reason <text>', 'why, for the audit log')
    .action(
      adminAction(ctx, async (admin, name: string, opts: ChangeOptions) => {
        const { account, token } = await (await store(admin)).rotate(name, change(admin, opts));
        printLine(
          ctx.io.stdout,
          `Rotated the token of ${accountLine(account)}. The new token, shown this once:`,
        );
        printLine(ctx.io.stdout, `token: ${token}`);
        return EXIT.ok;
      }),
    );

  operator
    .command('roles')
    .description("replace an operator's roles")
    .argument('<name>')
    .requiredOption('--roles <roles>', ROLES_HELP)
    .option('--reason <text>', 'why, for the audit log')
    .action(
      adminAction(ctx, async (admin, name: string, opts: ChangeOptions & { roles: string }) => {
        const account = await (await store(admin)).setRoles(name, roleList(opts.roles), change(admin, opts));
        printLine(ctx.io.stdout, `Changed the roles of ${accountLine(account)}.`);
        return EXIT.ok;
      }),
    );

  operator
    .command('tenants')
    .description("limit an operator to some tenants' work, or (--every-tenant) lift the limit")
    .argument('<name>')
    .option('--tenants <tenants>', TENANTS_HELP)
    .option('--every-tenant', 'let the operator see and decide every tenant’s work')
    .option('--reason <text>', 'why, for the audit log')
    .action(
      adminAction(
        ctx,
        async (admin, name: string, opts: ChangeOptions & { tenants?: string; everyTenant?: boolean }) => {
          if ((opts.tenants === undefined) === !opts.everyTenant)
            throw new OperatorInputError('give either --tenants <tenants> or --every-tenant');
          const tenants = opts.everyTenant ? null : tenantList(opts.tenants!);
          const account = await (await store(admin)).setTenants(name, tenants, change(admin, opts));
          printLine(ctx.io.stdout, `Changed the tenants of ${accountLine(account)}.`);
          return EXIT.ok;
        },
      ),
    );

  program
    .command('login')
    .description('store your operator token for the CLI (typed, or from stdin) once replyflow accepts it')
    .action(
      operatorAction(ctx, async (session) => {
        const token = (await ctx.io.readSecret('Operator token: ')).trim();
        if (!token) throw new OperatorInputError('no token given: type it at the prompt or pipe it in');
        const me = await session.api(token).whoami();
        const file = tokenFile(session.config, ctx.io.env);
        storeToken(file, token);
        const scope = me.tenants ? `; ${tenantsInWords(me.tenants)}` : '';
        printLine(
          ctx.io.stdout,
          `Logged in as ${me.operator} (roles ${me.roles.join(', ')}${scope}); token kept in ${file}.`,
        );
        if (session.config.REPLYFLOW_OPERATOR_TOKEN)
          printLine(
            ctx.io.stderr,
            'replyflow: REPLYFLOW_OPERATOR_TOKEN is set and comes first; unset it to use this login',
          );
        return EXIT.ok;
      }),
    );

  program
    .command('logout')
    .description('remove the token `replyflow login` stored')
    .action(
      operatorAction(ctx, async (session) => {
        const file = tokenFile(session.config, ctx.io.env);
        printLine(
          ctx.io.stdout,
          removeToken(file) ? `Logged out: removed ${file}.` : `Not logged in (no ${file}).`,
        );
        return EXIT.ok;
      }),
    );
}

interface ChangeOptions {
  reason?: string;
}

async function store(admin: AdminSession) {
  return createOperatorStore(await admin.pool());
}

/** Account changes are the admin's: the audit log names them by OS user. */
function change(admin: AdminSession, opts: ChangeOptions): AccountChange {
  return { by: admin.actor, reason: opts.reason?.trim() || undefined };
}

function roleList(value: string): string[] {
  const roles = value
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  if (roles.length === 0) throw new OperatorInputError(`--roles needs at least one role: ${ROLES_HELP}`);
  return roles;
}

function tenantList(value: string): string[] {
  const tenants = value
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  if (tenants.length === 0)
    throw new OperatorInputError(
      `--tenants needs at least one tenant (or use --every-tenant): ${TENANTS_HELP}`,
    );
  return tenants;
}

function accountLine(account: OperatorAccount): string {
  const scope = account.tenants ? `; ${tenantsInWords(account.tenants)}` : '';
  return `operator ${account.name} (roles ${account.roles.join(',')}${scope}${account.disabled ? ', disabled' : ''})`;
}

function printAccounts(io: CliIo, accounts: OperatorAccount[], json?: boolean): void {
  // The credential id is left out: it names a token, and nobody needs it to manage accounts.
  const rows = accounts.map(({ name, roles, tenants, disabled, createdAt, rotatedAt }) => ({
    name,
    roles,
    tenants,
    disabled,
    createdAt: createdAt.toISOString(),
    rotatedAt: rotatedAt.toISOString(),
  }));
  printListing(io, rows, {
    json,
    empty: 'No operators yet: `replyflow operator add <name> --roles …`.',
    columns: [
      ['NAME', (r) => r.name],
      ['ROLES', (r) => r.roles.join(',')],
      ['STATUS', (r) => (r.disabled ? 'disabled' : 'enabled')],
      ['TENANTS', (r) => (r.tenants ? r.tenants.join(',') : 'every tenant')],
      ['CREATED', (r) => r.createdAt],
      ['TOKEN ROTATED', (r) => r.rotatedAt],
    ],
  });
}
