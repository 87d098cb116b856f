// Every revocation ends its tenant's held work, whoever made it: Slack's app_uninstalled or
// tokens_revoked notice, or the admin's `replyflow tenant remove`. The store is the truth: a receiver
// announces each revocation it finds there — a Slack notice's at once, any other at its next look
// (every ANNOUNCE_EVERY_MS) — by starting one `tenantRevoked` workflow per revocation
// (workflows/tenant-revoked.ts), which tells the tenant's held runs. The workflow id names the
// revocation's time, and a closed one is not started again: receivers side by side, a repeated notice,
// and every later look start it once.
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { tenantRevokedWorkflowId } from '../../workflows/messages';
import type { Pool } from '../db/pool';
import { revokedSince } from '../db/tenant-credentials';
import { errorMessage } from '../failures';
import type { Logger } from '../logger';

/** How often a receiver looks for revocations it has not announced. */
export const ANNOUNCE_EVERY_MS = 10_000;
/**
 * How far back it looks: revocations made while no receiver ran are announced when one starts. Within
 * Temporal's retention a closed announcement is not repeated; past it, one would be (harmless: each
 * run reads the revocation itself).
 */
export const LOOKBACK_MS = 24 * 3_600_000;

interface RevocationAnnouncer {
  /** Starts the revocation's announcement, unless it has been started already. */
  announce(tenant: string, revokedAt: Date): Promise<void>;
  /** Announces what the store holds that this receiver has not announced yet. */
  look(): Promise<void>;
  stop(): void;
}

export function revocationAnnouncer(options: {
  pool: Pool;
  client: Client;
  taskQueue: string;
  logger: Logger;
  /** How each start is bounded (the receiver's deadline calls). */
  call: <T>(start: () => Promise<T>) => Promise<T>;
  /** Look every this often (0: only when asked). */
  everyMs?: number;
}): RevocationAnnouncer {
  const { pool, client, taskQueue, logger, call } = options;
  const announced = new Set<string>();
  let looking: Promise<void> | undefined;

  async function announce(tenant: string, revokedAt: Date): Promise<void> {
    const workflowId = tenantRevokedWorkflowId(tenant, String(revokedAt.getTime()));
    if (announced.has(workflowId)) return;
    await call(() =>
      client.workflow
        .start('tenantRevoked', {
          workflowId,
          taskQueue,
          args: [{ tenant }],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
        })
        .then(
          () => logger.info({ tenant }, 'announced a revocation to the tenant’s held work'),
          (err: unknown) => {
            if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          },
        ),
    );
    announced.add(workflowId);
  }

  async function lookOnce(): Promise<void> {
    let failed: unknown;
    for (const { tenant, revokedAt } of await revokedSince(pool, LOOKBACK_MS)) {
      // One start Temporal does not confirm in time does not hold up the revocations after it; it
      // is tried again at the next look.
      await announce(tenant, revokedAt).catch((err: unknown) => {
        failed ??= err;
      });
    }
    if (failed) throw failed;
  }

  const look = () => {
    looking ??= lookOnce().finally(() => {
      looking = undefined;
    });
    return looking;
  };

  const everyMs = options.everyMs ?? ANNOUNCE_EVERY_MS;
  const timer =
    everyMs > 0
      ? setInterval(
          () =>
            void look().catch((err: unknown) =>
              // Looked at again next time: nothing is lost while Temporal or PostgreSQL is down.
              logger.warn({ err: errorMessage(err) }, 'could not announce revocations; trying again'),
            ),
          everyMs,
        )
      : undefined;
  timer?.unref();
  return { announce, look, stop: () => clearInterval(timer) };
}
