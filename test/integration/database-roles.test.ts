// What the application's database role (the one receivers and workers connect as) cannot do, played by
// an attacker who holds only its password: create or change operators, delete or rewrite used
// decisions, read the seal keys, insert a decision with a seal it made up, or write an audit row
// claiming an operator's decision that the decision path never saw. And what the product still does
// as that role: the decision path's inserts with a real seal, the refusal rows and conversation moves
// of the operator commands. Real embedded PostgreSQL, connected as the product connects.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { ActivityDeps } from '../../activities';
import { operationsActivities } from '../../activities/operations';
import type { OperatorAccount } from '../../src/db/operators';
import { NOT_PERMITTED, recordAction } from '../../src/operator/audit';
import { operateConversation } from '../../src/operator/conversations';
import { sealFor, testOperator } from '../support/operators';
import { database } from '../support/servers';
import { uniqueId } from '../support/system';

/** The error PostgreSQL raised for `sql` as the application role, or 'allowed'. */
async function asApp(sql: string, values: unknown[] = []): Promise<string> {
  try {
    await (await database()).pool.query(sql, values);
    return 'allowed';
  } catch (err) {
    return (err as Error).message;
  }
}

describe('database roles: the application role is not an admin and cannot claim a decision', function () {
  this.timeout(60_000);
  let ben: OperatorAccount;

  before(async function () {
    const { url, adminUrl } = await database();
    // A DATABASE_URL whose role is also the admin (no REPLYFLOW_ADMIN_DATABASE_URL) has no second role to test.
    if (new URL(url).username === new URL(adminUrl).username) this.skip();
    ben = (await testOperator(['approve'])).account;
  });

  /** A decision_requests row as the decision path inserts it: the seal the codec server made. */
  const useSealed = (seal: string, row: { requestId: string; workflowId: string; operator: string }) =>
    asApp(
      'INSERT INTO decision_requests (request_id, workflow_id, delivery, operator, seal) VALUES ($1, $2, $3, $4, $5)',
      [row.requestId, row.workflowId, `update:${randomUUID()}`, row.operator, seal],
    );

  /** A real seal by ben for `workflowId`, as the codec server makes it. */
  const sealedByBen = (workflowId: string, requestId = randomUUID()) => ({
    requestId,
    workflowId,
    operator: ben.name,
    seal: sealFor(ben, { workflowId, reason: 'checked' }, { requestId }).seal!,
  });

  describe('as the application role, the database refuses', () => {
    for (const [what, sql] of [
      [
        'to create an operator',
        `INSERT INTO operators (name, roles, token_hash, credential_id) VALUES ('mallory', '{view,approve}', '\\x00', '${randomUUID()}')`,
      ],
      ['to grant roles', `UPDATE operators SET roles = '{view,resend,approve}'`],
      ['to re-enable or delete an operator', 'DELETE FROM operators'],
      ['to delete used decisions (so that one counts again)', 'DELETE FROM decision_requests'],
      ['to rewrite a used decision', `UPDATE decision_requests SET delivery = 'update:again'`],
      ['to read the seal keys', 'SELECT * FROM seal_keys'],
      ['to register a seal key', `INSERT INTO seal_keys (key_id, seal_key) VALUES ('mine', '\\x00')`],
    ] as const) {
      it(what, async () => {
        assert.match(await asApp(sql), /permission denied/);
      });
    }

    it('an audit row "ben approve accepted" that no used decision request backs', async () => {
      const workflowId = `webhook:sandbox:${uniqueId('evt_')}`;
      const forged = await asApp(
        `INSERT INTO audit_log (actor, approver, action, workflow_id, state_before, state_after, reason, result, request_id)
         VALUES ($1, $1, 'approve', $2, 'awaiting_approval', 'processing', 'looks right', 'accepted', $3)`,
        [ben.name, workflowId, randomUUID()],
      );
      assert.match(forged, /^audit_log: an accepted approve by \S+ needs the sealed decision it comes from/);
    });

    it("an accepted decision row pointing at someone else's used request, or at another workflow", async () => {
      const used = sealedByBen(`webhook:sandbox:${uniqueId('evt_')}`);
      assert.equal(await useSealed(used.seal, used), 'allowed');
      const row = (actor: string, workflowId: string) =>
        asApp(
          `INSERT INTO audit_log (actor, action, workflow_id, reason, result, request_id)
           VALUES ($1, 'resend', $2, 'again', 'accepted', $3)`,
          [actor, workflowId, used.requestId],
        );
      assert.match(await row('ana', used.workflowId), /^audit_log: an accepted resend by ana needs/);
      assert.match(await row(ben.name, 'webhook:sandbox:other'), /^audit_log: an accepted resend by/);
    });

    it('an audit row of an account change or a purge: those are the admin’s', async () => {
      for (const action of ['operator add', 'operator roles', 'purge']) {
        const forged = await asApp(
          `INSERT INTO audit_log (actor, action, workflow_id, result) VALUES ('admin:root', $1, 'operator:mallory', 'accepted')`,
          [action],
        );
        assert.match(forged, /^audit_log: .* rows are the admin's/, action);
      }
    });

    it('a decision_requests row whose seal does not verify, saying what is wrong', async () => {
      const workflowId = `webhook:sandbox:${uniqueId('evt_')}`;
      const genuine = sealedByBen(workflowId);
      const [, claims, mac] = genuine.seal.split('.') as [string, string, string];
      const otherKey = Buffer.alloc(32, 9).toString('base64');
      const forgedWith = (key: string) =>
        sealFor(ben, { workflowId, reason: 'checked' }, { requestId: genuine.requestId, key }).seal!;
      const claimsOf = (changes: Record<string, unknown>) =>
        Buffer.from(
          JSON.stringify({ ...JSON.parse(Buffer.from(claims, 'base64url').toString()), ...changes }),
        ).toString('base64url');

      const cases: [string, string, RegExp][] = [
        [
          'made with another key',
          forgedWith(otherKey),
          /the seal does not verify \(the MAC does not match key default\)/,
        ],
        [
          'claims edited after sealing',
          `rfs1.${claimsOf({ operator: 'ana' })}.${mac}`,
          /the seal does not verify \(the MAC does not match/,
        ],
        [
          'a key nobody registered',
          `rfs1.${claimsOf({ keyId: 'nope' })}.${mac}`,
          /the seal does not verify \(key nope is not registered/,
        ],
        ['not a seal at all', 'rfs1.bm90IGpzb24.AAAA', /the seal does not verify \(unreadable/],
        ['another format', 'v2.x.y', /the seal does not verify \(not a replyflow seal/],
      ];
      for (const [what, seal, expected] of cases)
        assert.match(
          await useSealed(seal, genuine),
          new RegExp(`^decision_requests: ${expected.source}`),
          what,
        );
      assert.match(
        await asApp(
          'INSERT INTO decision_requests (request_id, workflow_id, delivery, operator) VALUES ($1, $2, $3, $4)',
          [randomUUID(), workflowId, 'update:x', ben.name],
        ),
        /^decision_requests: request \S+ has no seal/,
      );
    });

    it('a forged row behind temporary tables that shadow decision_requests and seal_keys', async () => {
      // Temporary tables come first in a session's search path: the checks must not look there.
      const client = new pg.Client({ connectionString: (await database()).url });
      await client.connect();
      const requestId = randomUUID();
      const workflowId = `webhook:sandbox:${uniqueId('evt_')}`;
      try {
        await client.query(
          'CREATE TEMP TABLE decision_requests (LIKE public.decision_requests INCLUDING DEFAULTS)',
        );
        await client.query(
          `INSERT INTO decision_requests (request_id, workflow_id, delivery, operator)
                            VALUES ($1, $2, 'update:x', $3)`,
          [requestId, workflowId, ben.name],
        );
        await client.query('CREATE TEMP TABLE seal_keys (key_id text, seal_key bytea)');
        await client.query("INSERT INTO seal_keys VALUES ('default', '\\x00')");
        await assert.rejects(
          client.query(
            `INSERT INTO public.audit_log (actor, action, workflow_id, result, request_id)
             VALUES ($1, 'approve', $2, 'accepted', $3)`,
            [ben.name, workflowId, requestId],
          ),
          /^error: audit_log: an accepted approve/,
        );
      } finally {
        await client.end();
      }
    });

    for (const sql of [
      'DROP TRIGGER decision_requests_sealed ON decision_requests',
      'ALTER TABLE audit_log DISABLE TRIGGER audit_log_claims',
      'CREATE OR REPLACE FUNCTION audit_log_check_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$',
      'ALTER FUNCTION decision_requests_verify_seal() SECURITY INVOKER',
    ])
      it(`to change the checks: ${sql.split(' ').slice(0, 4).join(' ')} …`, async () => {
        assert.match(await asApp(sql), /must be owner|permission denied/);
      });

    it('a genuine seal used for another request, operator or workflow than the one it names', async () => {
      const genuine = sealedByBen(`webhook:sandbox:${uniqueId('evt_')}`);
      for (const row of [
        { ...genuine, requestId: randomUUID() },
        { ...genuine, operator: 'ana' },
        { ...genuine, workflowId: 'webhook:sandbox:other' },
      ])
        assert.match(await useSealed(genuine.seal, row), /^decision_requests: the seal is for request /);
    });
  });

  describe('as the application role, the product still', () => {
    it('uses a sealed decision and audits it as accepted (the decision path)', async () => {
      const decided = sealedByBen(`webhook:sandbox:${uniqueId('evt_')}`);
      assert.equal(await useSealed(decided.seal, decided), 'allowed');
      const { writeAudit } = operationsActivities({ pool: (await database()).pool } as ActivityDeps);
      await writeAudit({
        actor: ben.name,
        approver: ben.name,
        action: 'approve',
        workflowId: decided.workflowId,
        stateBefore: 'awaiting_approval',
        stateAfter: 'processing',
        reason: 'checked',
        result: 'accepted',
        requestId: decided.requestId,
      });
      const { rows } = await (await database()).pool.query(
        'SELECT actor, action, result FROM audit_log WHERE request_id = $1',
        [decided.requestId],
      );
      assert.deepEqual(rows, [{ actor: ben.name, action: 'approve', result: 'accepted' }]);
    });

    it('audits refused decisions and refused commands, and moves conversations', async () => {
      const pool = (await database()).pool;
      const { writeAudit } = operationsActivities({ pool } as ActivityDeps);
      await writeAudit({
        actor: '(unverified)',
        action: 'approve',
        workflowId: `webhook:sandbox:${uniqueId('evt_')}`,
        result: 'rejected: forged: the seal does not verify',
      });
      await recordAction(pool, { actor: ben.name, action: 'view', target: 'audit', result: NOT_PERMITTED });
      const conversationKey = `sandbox:${uniqueId('c')}`;
      await pool.query(
        `INSERT INTO conversations (id, machine, state, version) VALUES ($1, 'chat', 'bot_handling', 1)`,
        [conversationKey],
      );
      const moved = await operateConversation(pool, {
        action: 'handoff',
        conversationKey,
        operator: ben.name,
        reason: 'a person takes over',
      });
      assert.deepEqual(moved, { ok: true, from: 'bot_handling', to: 'human_handling' });
    });
  });

  it('keeps every table owned by the admin, none by the application role', async () => {
    const { rows } = await (await database()).pool.query<{ tablename: string }>(
      `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tableowner = current_user`,
    );
    assert.deepEqual(rows, []);
  });
});
