// Where the LINE provider and target find a channel by its tenant (`line:<destination>`): TENANTS_FILE's
// channels always, and the tenant store's with LINE_CHANNELS=tenants (src/config.ts). Without either,
// there is nothing to look up and LINE is only its LINE_CHANNEL_* shortcut, as before.
import type { Config } from '../config';
import type { TenantSource } from '../db/tenant-credentials';
import type { TenantDirectory } from './directory';
import { type LineChannelSecret, lineChannelSecret } from './tenants-file';

/** A destination's own channel. */
export interface LineChannel {
  tenant: string;
  source: TenantSource;
  /** Undefined when the channel cannot be used: see `unusable`. */
  secret?: LineChannelSecret;
  /** Why `secret` is missing, said the way an error goes on (never a secret). */
  unusable?: string;
  /** The admin's reason for a revocation: for operators (a send's error), not for senders (a 401). */
  revokedReason?: string;
}

export interface LineChannels {
  /**
   * The tenant's own channel, undefined when it has none. `fresh`: read the store again (a credential
   * that was refused may have been rotated). @throws when the store cannot be read.
   */
  channel(tenant: string, options?: { fresh?: boolean }): Promise<LineChannel | undefined>;
}

/** LINE's channels for this process, or undefined when it has none besides the shortcut. */
export function lineChannelsOf(
  config: Pick<Config, 'LINE_CHANNELS'>,
  directory: TenantDirectory | undefined,
): LineChannels | undefined {
  if (!directory) return undefined;
  const stored = config.LINE_CHANNELS === 'tenants';
  if (!stored && ![...directory.file.entries.keys()].some((tenant) => tenant.startsWith('line:')))
    return undefined;
  return {
    async channel(tenant, options = {}) {
      const found = stored ? await directory.credential(tenant, options) : directory.file.entries.get(tenant);
      if (!found) return undefined;
      const { source, revokedReason } = found.record;
      if (!found.secret)
        return {
          tenant,
          source,
          unusable: 'revoked',
          ...(revokedReason ? { revokedReason: revokedReason.slice(0, 200) } : {}),
        };
      const secret = lineChannelSecret.safeParse(found.secret);
      if (!secret.success)
        return {
          tenant,
          source,
          unusable:
            'stored without a channel secret and an access token (replyflow tenant rotate gives it both)',
        };
      return { tenant, source, secret: secret.data };
    },
  };
}

/** How an admin changes a channel's credential, for errors that name the fix. */
export function channelFix(channel: Pick<LineChannel, 'tenant' | 'source'>): string {
  return channel.source === 'file'
    ? `its variables in TENANTS_FILE (then restart)`
    : `\`replyflow tenant rotate ${channel.tenant}\``;
}
