// The codec_sessions table's one owner: a row per browser sign-in at /codec/login, named by the
// session cookie, so that signing out ends that session on the server (src/temporal/codec-server.ts
// checks the row on every request the cookie makes). Whether the operator is still enabled with the
// same credential is the operators table's to say (src/db/operators.ts), not this one's.
import { randomUUID } from 'node:crypto';
import type { Pool } from './pool';

/** Rows this long past their expiry go, a few with each new sign-in: the table stays small without a timer. */
const PRUNE_AFTER_MS = 86_400_000;

export function createCodecSessionStore(pool: Pool) {
  return {
    /** Opens a session for the operator's current credential. @returns its id, for the cookie. */
    async open(session: { operator: string; credentialId: string; expiresAt: Date }): Promise<string> {
      const id = randomUUID();
      await pool.query(
        'INSERT INTO codec_sessions (id, operator, credential_id, expires_at) VALUES ($1, $2, $3, $4)',
        [id, session.operator, session.credentialId, session.expiresAt],
      );
      await pool.query(
        `DELETE FROM codec_sessions WHERE id IN (
           SELECT id FROM codec_sessions WHERE expires_at < $1 ORDER BY expires_at LIMIT 5)`,
        [new Date(Date.now() - PRUNE_AFTER_MS)],
      );
      return id;
    },

    /** Whether the session is open: neither signed out nor expired. */
    async isOpen(id: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        'SELECT 1 FROM codec_sessions WHERE id = $1 AND revoked_at IS NULL AND expires_at > now()',
        [id],
      );
      return rowCount === 1;
    },

    /** Signs the session out; a second sign-out of the same session changes nothing. */
    async revoke(id: string): Promise<void> {
      await pool.query('UPDATE codec_sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [
        id,
      ]);
    },
  };
}

export type CodecSessionStore = ReturnType<typeof createCodecSessionStore>;
