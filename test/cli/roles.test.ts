// Operator roles: the role file (JSON and YAML), REPLYFLOW_ROLES, the default without either, and the
// mistakes that must stop the CLI before it acts. Unit tests: no servers.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_ROLES, loadRoles, permits, RoleConfigError, rolesOf } from '../../src/operator/roles';

describe('operator roles', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-roles-'));
  const file = (name: string, text: string) => {
    const at = path.join(dir, name);
    writeFileSync(at, text);
    return at;
  };

  it('lets everyone view and nobody act without a role file or REPLYFLOW_ROLES', () => {
    const table = loadRoles({});
    assert.equal(table, DEFAULT_ROLES);
    assert.equal(permits(table, 'anyone', 'view'), true);
    assert.equal(permits(table, undefined, 'view'), true);
    for (const role of [
      'resend',
      'mark-sent',
      'discard',
      'approve',
      'reprocess',
      'conversation',
      'purge',
    ] as const)
      assert.equal(permits(table, 'anyone', role), false, role);
  });

  it('reads a YAML role file: named operators, a default for the rest, * for every role', () => {
    const table = loadRoles({
      REPLYFLOW_ROLES_FILE: file(
        'roles.yaml',
        'operators:\n  alice: [mark-sent, resend]\n  bob: [approve]\n  lead: ["*"]\ndefault: [view]\n',
      ),
    });
    assert.deepEqual([...rolesOf(table, 'alice')].sort(), ['mark-sent', 'resend', 'view']);
    assert.equal(permits(table, 'alice', 'approve'), false);
    assert.equal(permits(table, 'bob', 'approve'), true);
    assert.equal(permits(table, 'bob', 'view'), true, 'every role implies viewing');
    assert.equal(permits(table, 'lead', 'purge'), true);
    assert.deepEqual([...rolesOf(table, 'stranger')], ['view']);
  });

  it('reads a JSON role file, where operators not named get nothing without a default', () => {
    const table = loadRoles({
      REPLYFLOW_ROLES_FILE: file('roles.json', JSON.stringify({ operators: { carol: ['purge'] } })),
    });
    assert.equal(permits(table, 'carol', 'purge'), true);
    assert.equal(permits(table, 'stranger', 'view'), false);
  });

  it('reads REPLYFLOW_ROLES inline, with * for everyone else', () => {
    const table = loadRoles({ REPLYFLOW_ROLES: 'alice=mark-sent+discard, bob=approve, *=view' });
    assert.equal(permits(table, 'alice', 'discard'), true);
    assert.equal(permits(table, 'bob', 'mark-sent'), false);
    assert.equal(permits(table, 'zoe', 'view'), true);
    assert.equal(permits(table, 'zoe', 'approve'), false);
  });

  it('lists every mistake at once and refuses both sources together', () => {
    assert.throws(
      () => loadRoles({ REPLYFLOW_ROLES: 'alice=sudo+view,bob,=approve' }),
      (err: unknown) => err instanceof RoleConfigError && err.problems.length === 2,
    );
    assert.throws(
      () => loadRoles({ REPLYFLOW_ROLES: 'alice=sudo' }),
      /alice: unknown role sudo \(known: view, resend, mark-sent/,
    );
    assert.throws(
      () =>
        loadRoles({ REPLYFLOW_ROLES_FILE: file('bad.yaml', 'operators:\n  alice: [view]\nadmins: [x]\n') }),
      RoleConfigError,
    );
    assert.throws(
      () => loadRoles({ REPLYFLOW_ROLES_FILE: path.join(dir, 'missing.yaml') }),
      /cannot read it \(ENOENT\)/,
    );
    assert.throws(
      () => loadRoles({ REPLYFLOW_ROLES_FILE: file('x.yaml', 'operators: {}'), REPLYFLOW_ROLES: 'a=view' }),
      /both set/,
    );
  });
});
