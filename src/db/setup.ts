// What the admin does to replyflow's database before receivers and workers use it, in one step: apply
// the migrations as the tables' owner, give the application role exactly its privileges, register the
// seal keys of the payload keys the deployment runs with. `replyflow setup` (compose, production),
// `replyflow start` (the embedded PostgreSQL), `replyflow cluster` and the tests all run this.
import { migrate } from './migrate';
import { type Pool, withClient } from './pool';
import { grantApplicationRole, refuseUnsafeRole } from './privileges';
import { registerSealKeys, type SealKeyChanges } from './seal-keys';

interface SetupOptions {
  /** The role receivers and workers connect as; unset: grant nothing (it is the admin's own role). */
  appRole?: string;
  /** The payload keys by id (current and decryption keys); unset: leave the seal keys as they are. */
  payloadKeys?: Readonly<Record<string, Buffer>>;
}

interface SetupReport {
  migrated: string[];
  sealKeys?: SealKeyChanges;
}

/** @param admin a pool connected as the admin: the owner of replyflow's tables. */
export async function setUpDatabase(admin: Pool, options: SetupOptions): Promise<SetupReport> {
  // Before anything changes: a role that owns the tables would keep owning the old ones.
  const { appRole } = options;
  if (appRole) await withClient(admin, (client) => refuseUnsafeRole(client, appRole));
  const migrated = await migrate(admin);
  return withClient(admin, async (client) => {
    if (options.appRole) await grantApplicationRole(client, options.appRole);
    const sealKeys = options.payloadKeys ? await registerSealKeys(client, options.payloadKeys) : undefined;
    return { migrated, sealKeys };
  });
}
