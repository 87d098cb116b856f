// Operator accounts from the CLI: the admin (whoever holds the admin credential, never the application
// role's) adds, lists, disables, enables, rotates and re-roles operators, each change an audit row by
// `admin:<OS user>`; an operator logs in (the token checked by the codec server, then kept in a 0600
// file) and out. Real PostgreSQL, a receiver's codec server, the real executable for login.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createOperatorStore } from '../../src/db/operators';
import { testOperator } from '../support/operators';
import { database } from '../support/servers';
import { uniqueId } from '../support/system';
import { auditRows } from '../support/workflows';
import { adminEnv, cli, cliCodecReceiver, cliJson, cliProcess } from './harness';

const ADMIN = `admin:${os.userInfo().username}`;

describe('operator CLI: accounts, login and logout (PostgreSQL, codec server)', function () {
  this.timeout(120_000);

  const tokenOf = (stdout: string) => {
    const lines = stdout.split('\n').filter((l) => l.startsWith('token: '));
    assert.equal(lines.length, 1, 'the token is printed on one line `token: …`');
    return lines[0]!.slice('token: '.length);
  };
  const whoami = async (token: string) =>
    fetch(`${(await cliCodecReceiver()).url}/codec/whoami`, {
      headers: { authorization: `Bearer ${token}` },
    });
  const store = async () => createOperatorStore((await database()).adminPool);
  /** The CLI as the admin runs it: with the admin credential. */
  const admin = async (argv: string[]) => cli(argv, { env: await adminEnv() });
  const adminJson = async <T>(argv: string[]) => cliJson<T>(argv, { env: await adminEnv() });

  it('adds, lists, disables, enables, rotates and re-roles an operator, each change audited by the admin', async () => {
    const name = uniqueId('ana-');
    const added = await admin([
      'operator',
      'add',
      name,
      '--roles',
      'resend, mark-sent',
      '--reason',
      'new hire',
    ]);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, new RegExp(`^Added operator ${name} \\(roles view,resend,mark-sent\\)`));
    const token = tokenOf(added.stdout);
    assert.equal((await whoami(token)).status, 200, 'the printed token is the operator’s credential');
    assert.deepEqual(await (await whoami(token)).json(), {
      operator: name,
      roles: ['view', 'resend', 'mark-sent'],
    });

    const listed = await adminJson<{ name: string; roles: string[]; disabled: boolean }[]>([
      'operator',
      'list',
    ]);
    const row = listed.find((o) => o.name === name);
    assert.deepEqual([row?.roles, row?.disabled], [['view', 'resend', 'mark-sent'], false]);
    assert.ok(!JSON.stringify(listed).includes(token), 'list never shows a token');
    const table = await admin(['operator', 'list']);
    assert.match(table.stdout.split('\n')[0]!, /^NAME\s+ROLES\s+STATUS/);
    assert.match(table.stdout, new RegExp(`${name}\\s+view,resend,mark-sent\\s+enabled`));

    assert.equal((await admin(['operator', 'disable', name, '--reason', 'left the team'])).code, 0);
    assert.equal((await whoami(token)).status, 401);
    assert.equal((await (await store()).get(name))?.disabled, true);
    assert.equal((await admin(['operator', 'enable', name])).code, 0);
    assert.equal((await whoami(token)).status, 200);

    const rotated = await admin(['operator', 'rotate', name, '--reason', 'token leaked']);
    assert.equal(rotated.code, 0, rotated.stderr);
    const fresh = tokenOf(rotated.stdout);
    assert.notEqual(fresh, token);
    assert.equal((await whoami(token)).status, 401, 'the old token stops at once');
    assert.equal((await whoami(fresh)).status, 200);

    const reroled = await admin(['operator', 'roles', name, '--roles', 'approve']);
    assert.equal(reroled.code, 0, reroled.stderr);
    assert.deepEqual(await (await whoami(fresh)).json(), { operator: name, roles: ['view', 'approve'] });

    assert.deepEqual(
      (await auditRows(`operator:${name}`)).map((a) => [a.actor, a.action, a.reason, a.result]),
      [
        [ADMIN, 'operator add', 'new hire', 'accepted: roles view,resend,mark-sent'],
        [ADMIN, 'operator disable', 'left the team', 'accepted'],
        [ADMIN, 'operator enable', null, 'accepted'],
        [ADMIN, 'operator rotate', 'token leaked', 'accepted'],
        [ADMIN, 'operator roles', null, 'accepted: roles view,approve'],
      ],
    );
  });

  it('limits an operator to tenants at add and changes them later, each change audited; bad tenants change nothing', async () => {
    const name = uniqueId('tia-');
    const added = await admin([
      'operator',
      'add',
      name,
      '--roles',
      'discard',
      '--tenants',
      'slack:T1, line:U2',
    ]);
    assert.equal(added.code, 0, added.stderr);
    assert.match(
      added.stdout,
      new RegExp(`^Added operator ${name} \\(roles view,discard; tenants slack:T1,line:U2\\)`),
    );
    const token = tokenOf(added.stdout);
    assert.deepEqual(await (await whoami(token)).json(), {
      operator: name,
      roles: ['view', 'discard'],
      tenants: ['slack:T1', 'line:U2'],
    });
    const table = await admin(['operator', 'list']);
    assert.match(table.stdout, new RegExp(`${name}\\s+view,discard\\s+enabled\\s+slack:T1,line:U2`));

    for (const argv of [
      ['operator', 'tenants', name, '--tenants', 'slack:T1,acme"OR"1'],
      ['operator', 'tenants', name, '--tenants', ' , '],
      ['operator', 'tenants', name],
      ['operator', 'tenants', name, '--tenants', 'slack:T3', '--every-tenant'],
    ]) {
      const refused = await admin(argv);
      assert.equal(refused.code, 2, argv.join(' '));
      assert.match(refused.stderr, /^replyflow: [^\n]*(tenant)[^\n]*\n$/, argv.join(' '));
    }
    const bad = await admin([
      'operator',
      'add',
      uniqueId('tib-'),
      '--roles',
      'discard',
      '--tenants',
      'team-a',
    ]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /not a tenant: "team-a"/);
    assert.deepEqual((await (await store()).get(name))?.tenants, ['slack:T1', 'line:U2']);

    assert.equal((await admin(['operator', 'tenants', name, '--tenants', 'github:42'])).code, 0);
    assert.deepEqual(((await (await whoami(token)).json()) as { tenants?: string[] }).tenants, ['github:42']);
    const lifted = await admin(['operator', 'tenants', name, '--every-tenant', '--reason', 'team lead']);
    assert.equal(lifted.code, 0, lifted.stderr);
    assert.deepEqual(await (await whoami(token)).json(), { operator: name, roles: ['view', 'discard'] });
    assert.deepEqual(
      (await auditRows(`operator:${name}`)).map((a) => [a.actor, a.action, a.reason, a.result]),
      [
        [ADMIN, 'operator add', null, 'accepted: roles view,discard; tenants slack:T1,line:U2'],
        [ADMIN, 'operator tenants', null, 'accepted: tenants github:42'],
        [ADMIN, 'operator tenants', 'team lead', 'accepted: every tenant'],
      ],
    );
  });

  it('refuses every account command and purge without the admin credential: one line naming it, exit 2', async () => {
    const name = uniqueId('eve-');
    const existing = await testOperator(['discard']);
    for (const argv of [
      ['operator', 'add', name, '--roles', 'approve'],
      ['operator', 'list'],
      ['operator', 'disable', existing.account.name],
      ['operator', 'enable', existing.account.name],
      ['operator', 'rotate', existing.account.name],
      ['operator', 'roles', existing.account.name, '--roles', 'resend,approve'],
      ['operator', 'tenants', existing.account.name, '--tenants', 'slack:T1'],
      ['purge', '--older-than', '30d'],
    ]) {
      // DATABASE_URL is set, as for every operator: the application role's, which is not enough.
      const result = await cli(argv);
      assert.equal(result.code, 2, argv.join(' '));
      assert.match(
        result.stderr,
        /^replyflow: this command needs the admin credential: set REPLYFLOW_ADMIN_DATABASE_URL [^\n]*\(DATABASE_URL is the application role’s and may not change operators\)\n$/,
        argv.join(' '),
      );
    }
    assert.equal(await (await store()).get(name), undefined);
    assert.deepEqual(
      (await auditRows(`operator:${existing.account.name}`)).map((a) => a.action),
      ['operator add'],
    );
  });

  it('gets nowhere with the application role’s credential given as the admin’s', async () => {
    const name = uniqueId('eve-');
    const existing = await testOperator(['discard']);
    const asApp = { env: { REPLYFLOW_ADMIN_DATABASE_URL: (await database()).url } };
    for (const argv of [
      ['operator', 'add', name, '--roles', 'approve'],
      ['operator', 'roles', existing.account.name, '--roles', 'resend,approve'],
      ['operator', 'rotate', existing.account.name],
    ]) {
      const result = await cli(argv, asApp);
      assert.equal(result.code, 2, argv.join(' '));
      assert.match(
        result.stderr,
        /^replyflow: permission denied for table operators: REPLYFLOW_ADMIN_DATABASE_URL must be the admin's role/,
      );
    }
    assert.equal(await (await store()).get(name), undefined);
    assert.equal((await (await store()).get(existing.account.name))?.roles.join(), 'view,discard');
  });

  it('answers a bad account request with one line and exit 2, and changes nothing', async () => {
    const existing = await testOperator(['discard']);
    const missing = uniqueId('nobody-');
    const cases: [string[], RegExp][] = [
      [
        ['operator', 'add', uniqueId('x-'), '--roles', 'sudo'],
        /^replyflow: unknown role sudo \(known: view, /,
      ],
      [
        ['operator', 'add', 'Not A Name', '--roles', 'view'],
        /^replyflow: operator name "Not A Name" must be/,
      ],
      [['operator', 'add', existing.account.name, '--roles', 'view'], /exists already/],
      [['operator', 'add', uniqueId('x-'), '--roles', ' , '], /^replyflow: --roles needs at least one role/],
      [['operator', 'add', uniqueId('x-')], /required option '--roles <roles>'/],
      [['operator', 'disable', missing], new RegExp(`^replyflow: no operator named ${missing}$`)],
      [['operator', 'rotate', missing], /no operator named/],
      [['operator', 'roles', existing.account.name, '--roles', 'approve,root'], /unknown role root/],
    ];
    for (const [argv, message] of cases) {
      const result = await admin(argv);
      assert.equal(result.code, 2, argv.join(' '));
      assert.match(result.stderr.trim(), message, argv.join(' '));
      assert.equal(result.stderr.trim().split('\n').length, 1, 'one line');
    }
    assert.deepEqual(
      (await auditRows(`operator:${existing.account.name}`)).map((a) => a.action),
      ['operator add'],
    );
    assert.deepEqual(await auditRows(`operator:${missing}`), []);
    assert.equal((await (await store()).get(existing.account.name))?.roles.join(), 'view,discard');
  });

  it('logs in with a token from stdin into a 0600 file, which later commands use, and logs out', async () => {
    const op = await testOperator(['view']);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-login-'));
    // Where an operator's own login goes by default: $XDG_CONFIG_HOME/replyflow/operator-token.
    const env = { XDG_CONFIG_HOME: dir, REPLYFLOW_OPERATOR_TOKEN_FILE: undefined };
    const file = path.join(dir, 'replyflow', 'operator-token');

    const refused = await cliProcess(['login'], {
      env,
      input: 'rfo_not-anyones-token-0123456789abcdefghijklmnop\n',
    });
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /refused the operator token/);
    assert.equal(existsSync(file), false, 'a refused token is not stored');
    assert.equal((await cli(['held'], { env })).code, 2, 'not logged in');

    const loggedIn = await cliProcess(['login'], { env, input: `${op.token}\n` });
    assert.equal(loggedIn.code, 0, loggedIn.stderr);
    assert.equal(
      loggedIn.stdout.trim(),
      `Logged in as ${op.account.name} (roles view); token kept in ${file}.`,
    );
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(file)).mode & 0o077, 0, 'the folder is private too');
    assert.equal(readFileSync(file, 'utf8').trim(), op.token);
    assert.ok(!`${loggedIn.stdout}${loggedIn.stderr}`.includes(op.token), 'the token is never echoed');

    const listed = await cli(['held', '--json'], { env });
    assert.equal(listed.code, 0, listed.stderr);

    chmodSync(file, 0o644);
    const exposed = await cli(['held'], { env });
    assert.equal(exposed.code, 2);
    assert.equal(
      exposed.stderr.trim(),
      `replyflow: ${file} may be read by others (mode 644): \`chmod 600 ${file}\``,
    );
    chmodSync(file, 0o600);

    const out = await cli(['logout'], { env });
    assert.deepEqual([out.code, out.stdout.trim()], [0, `Logged out: removed ${file}.`]);
    assert.equal(existsSync(file), false);
    assert.equal((await cli(['logout'], { env })).stdout.trim(), `Not logged in (no ${file}).`);
  });

  it('uses REPLYFLOW_OPERATOR_TOKEN_FILE when set, and refuses an empty login without writing', async () => {
    const op = await testOperator(['view']);
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'replyflow-login-')), 'token');
    const empty = await cli(['login'], { env: { REPLYFLOW_OPERATOR_TOKEN_FILE: file }, secret: '  ' });
    assert.deepEqual([empty.code, existsSync(file)], [2, false]);
    const loggedIn = await cli(['login'], { env: { REPLYFLOW_OPERATOR_TOKEN_FILE: file }, secret: op.token });
    assert.equal(loggedIn.code, 0, loggedIn.stderr);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    // Replacing a file another hand left readable gives it the login's mode, not the old one.
    writeFileSync(file, 'old\n', { mode: 0o644 });
    assert.equal(
      (await cli(['login'], { env: { REPLYFLOW_OPERATOR_TOKEN_FILE: file }, secret: op.token })).code,
      0,
    );
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(
      (
        await cli(['show', 'webhook:sandbox:nope'], { env: { REPLYFLOW_OPERATOR_TOKEN_FILE: file } })
      ).stderr.trim(),
      'replyflow: no workflow webhook:sandbox:nope',
    );
  });
});
