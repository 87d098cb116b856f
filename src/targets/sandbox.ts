// The sandbox target: replyflow's own demo API (served under /sandbox/api), in three flavours so a
// newcomer can watch every unknown-outcome path: `sandbox` honours idempotency keys and answers
// lookups, `sandbox-lookup` only answers lookups (after a consistency delay), `sandbox-blind` does
// neither, so an unknown outcome there goes to held. A reply carries its text and, as given, the
// Slack fields (blocks) or LINE message objects (quick replies) the sandbox page shows.
import type { SandboxMode } from '../model';
import { TargetError } from './errors';
import { classifyStatus, classifyTransportError } from './http-errors';
import type { TargetAdapter } from './types';

/** How long a committed reply stays invisible to lookups in `sandbox-lookup` mode. */
export const SANDBOX_CONSISTENCY_DELAY_MS = 2000;

export function sandboxTarget(mode: SandboxMode, baseUrl: string, apiToken: string): TargetAdapter {
  const base = baseUrl.replace(/\/$/, '');
  // The sandbox API serves workers only (src/sandbox/api.ts).
  const authorization = `Bearer ${apiToken}`;
  const capabilities = {
    idempotencyKey: mode === 'sandbox',
    lookup: mode !== 'sandbox-blind',
    consistencyDelayMs: mode === 'sandbox-lookup' ? SANDBOX_CONSISTENCY_DELAY_MS : 0,
  };
  const adapter: TargetAdapter = {
    name: mode,
    capabilities,
    async send({ effectId, step, body, signal }) {
      let response: Response;
      try {
        response = await fetch(`${base}/replies`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': effectId, authorization },
          // The sandbox shows Slack-style and LINE-style messages both: their fields go along as given.
          body: JSON.stringify({
            conversationId: step.destination.conversationId,
            text: body.text ?? '',
            ...(body.slack ? { slack: body.slack } : {}),
            ...(body.line ? { line: body.line } : {}),
            reference: effectId,
            mode,
          }),
          signal,
        });
      } catch (err) {
        throw classifyTransportError(err, signal);
      }
      if (!response.ok) throw classifyStatus(response.status, response.headers, 'sandbox');
      const { id } = (await response.json()) as { id: number };
      return { externalId: String(id) };
    },
  };
  if (capabilities.lookup) {
    adapter.lookup = async ({ effectId, signal }) => {
      const response = await fetch(`${base}/replies?reference=${encodeURIComponent(effectId)}`, {
        headers: { authorization },
        signal,
      });
      if (response.status === 404) return { found: false };
      if (!response.ok) throw new TargetError('retryable', `sandbox lookup failed (${response.status})`);
      const { id } = (await response.json()) as { id: number };
      return { found: true, externalId: String(id) };
    };
  }
  return adapter;
}
