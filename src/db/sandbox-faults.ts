// The sandbox_faults table's one owner: the fault an operator armed for a conversation's next
// sandbox send (src/sandbox/api.ts), taken by that send.
import type { SandboxFault } from '../model';
import type { Pool } from './pool';

export function createSandboxFaults(pool: Pool) {
  return {
    async armed(conversationId: string): Promise<SandboxFault | null> {
      const { rows } = await pool.query<{ fault: SandboxFault }>(
        'SELECT fault FROM sandbox_faults WHERE conversation_id = $1',
        [conversationId],
      );
      return rows[0]?.fault ?? null;
    },

    /** Arms `fault` for the conversation's next send, or disarms it (null). */
    async arm(conversationId: string, fault: SandboxFault | null): Promise<void> {
      if (fault)
        await pool.query(
          `INSERT INTO sandbox_faults (conversation_id, fault) VALUES ($1, $2)
           ON CONFLICT (conversation_id) DO UPDATE SET fault = EXCLUDED.fault, armed_at = now()`,
          [conversationId, fault],
        );
      else await pool.query('DELETE FROM sandbox_faults WHERE conversation_id = $1', [conversationId]);
    },

    /** Takes the armed fault, if any: each one applies to one send. */
    async take(conversationId: string): Promise<SandboxFault | undefined> {
      const { rows } = await pool.query<{ fault: SandboxFault }>(
        'DELETE FROM sandbox_faults WHERE conversation_id = $1 RETURNING fault',
        [conversationId],
      );
      return rows[0]?.fault;
    },
  };
}
