// The commands about operator accounts: `operator add|list|disable|enable|rotate|roles` for the admin
// (whoever can reach the database, as the running `replyflow start` or DATABASE_URL allows), and
// `login`/`logout` for an operator storing their own token for the CLI.
import os from 'node:os';
import type { Command } from 'commander';
import { type AccountChange, createOperatorStore, type OperatorAccount } from '../db/operators';
import { OPERATOR_ROLES } from '../model';
import { OperatorInputError } from '../operator/errors';
import { type CliContext, EXIT, operatorAction } from './command';
import { type CliIo, printJson, printLine, table } from './io';
import { OperatorApiClient } from './operator-api';
import { removeToken, storeToken, tokenFile } from './operator-token';
import { replyflowUrl, type Session } from './session';

const ROLES_HELP = `comma-separated, from ${OPERATOR_ROLES.join(', ')} (every operator may view)`;

export function registerAccountCommands(program: Command, ctx: CliContext): void {
  const operator = program
    .command('operator')
    .description(
      'operator accounts: each has roles and one token (needs DATABASE_URL, or the running `replyflow start`)',
    );

  operator
    .command('add')
    .description('create an operator; prints the token once')
    .argument('<name>', 'lower-case letters, digits, ".", "_" or "-"')
    .requiredOption('--roles <roles>', ROLES_HELP)
    .option('--reason <text>', 'why, for the audit log')
    .action(
      operatorAction(ctx, async (session, name: string, opts: ChangeOptions & { roles: string }) => {
        const { account, token } = await (await store(session)).add(name, roleList(opts.roles), change(opts));
        printLine(ctx.io.stdout, `Added ${accountLine(account)}. Its token, shown this once:`);
        printLine(ctx.io.stdout, `token: ${token}`);
        return EXIT.ok;
      }),
    );

  operator
    .command('list')
    .description('every operator, its roles and whether it is enabled')
    .option('--json', 'print JSON instead of a table')
    .action(
      operatorAction(ctx, async (session, opts: { json?: boolean }) => {
        printAccounts(ctx.io, await (await store(session)).list(), opts.json);
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
        operatorAction(ctx, async (session, name: string, opts: ChangeOptions) => {
          const account = await (await store(session))[command](name, change(opts));
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
      operatorAction(ctx, async (session, name: string, opts: ChangeOptions) => {
        const { account, token } = await (await store(session)).rotate(name, change(opts));
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
      operatorAction(ctx, async (session, name: string, opts: ChangeOptions & { roles: string }) => {
        const account = await (await store(session)).setRoles(name, roleList(opts.roles), change(opts));
        printLine(ctx.io.stdout, `Changed the roles of ${accountLine(account)}.`);
        return EXIT.ok;
      }),
    );

  program
    .command('login')
    .description('store your operator token for the CLI (typed, or from stdin) once replyflow accepts it')
    .action(
      operatorAction(ctx, async (session) => {
        const token = (await ctx.io.readSecret('Operator token: ')).trim();
        if (!token) throw new OperatorInputError('no token given: type it at the prompt or pipe it in');
        const me = await new OperatorApiClient(replyflowUrl(session.config), token).whoami();
        const file = tokenFile(session.config, ctx.io.env);
        storeToken(file, token);
        printLine(
          ctx.io.stdout,
          `Logged in as ${me.operator} (roles ${me.roles.join(', ')}); token kept in ${file}.`,
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

async function store(session: Session) {
  return createOperatorStore(await session.pool());
}

/** Account changes are the admin's, who is whoever runs the CLI with database access: named by OS user. */
function change(opts: ChangeOptions): AccountChange {
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    user = 'unknown';
  }
  return { by: `admin:${user}`, reason: opts.reason?.trim() || undefined };
}

function roleList(value: string): string[] {
  const roles = value
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  if (roles.length === 0) throw new OperatorInputError(`--roles needs at least one role: ${ROLES_HELP}`);
  return roles;
}

function accountLine(account: OperatorAccount): string {
  return `operator ${account.name} (roles ${account.roles.join(',')}${account.disabled ? ', disabled' : ''})`;
}

function printAccounts(io: CliIo, accounts: OperatorAccount[], json?: boolean): void {
  // The credential id is left out: it names a token, and nobody needs it to manage accounts.
  const rows = accounts.map(({ name, roles, disabled, createdAt, rotatedAt }) => ({
    name,
    roles,
    disabled,
    createdAt: createdAt.toISOString(),
    rotatedAt: rotatedAt.toISOString(),
  }));
  if (json) printJson(io.stdout, rows);
  else if (rows.length === 0)
    printLine(io.stdout, 'No operators yet: `replyflow operator add <name> --roles …`.');
  else
    printLine(
      io.stdout,
      table(
        ['NAME', 'ROLES', 'STATUS', 'CREATED', 'TOKEN ROTATED'],
        rows.map((r) => [
          r.name,
          r.roles.join(','),
          r.disabled ? 'disabled' : 'enabled',
          r.createdAt,
          r.rotatedAt,
        ]),
      ),
    );
}
