// The real servers tests run against, each started once per test run on first use and stopped by the
// root hook: a Temporal dev server, a time-skipping test server, an embedded PostgreSQL, and the
// workflow bundle. Tests isolate themselves with their own task queues, event ids and business keys.
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleOption } from '@temporalio/worker';
import { configSchema } from '../../src/config';
import { createPool, type Pool } from '../../src/db/pool';
import { setUpDatabase } from '../../src/db/setup';
import { startEmbeddedPostgres } from '../../src/embedded/postgres';
import { createLogger } from '../../src/logger';
import { findTemporalTestServer } from '../../src/temporal/binaries';
import { dataConverter } from '../../src/temporal/client';
import { type DevServer, startDevServer } from '../../src/temporal/dev-server';
import { workflowBundleFor } from '../../src/temporal/workflow-bundle';
import { installRuntime, WORKFLOWS_PATH } from '../../src/worker';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';

const { IndexedValueType } = temporal.api.enums.v1;

/** A fixed key so that recorded histories replay; never used outside tests. */
export const TEST_ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');

const teardowns: (() => Promise<void>)[] = [];

function once<T>(start: () => Promise<T>): () => Promise<T> {
  let started: Promise<T> | undefined;
  return () => {
    started ??= start();
    return started;
  };
}

/**
 * The SDK's runtime of a test process, installed by the root hooks before any test can install its
 * own: the SDK's lines go to stderr (the reporter keeps stdout) from REPLYFLOW_SDK_LOG_LEVEL up
 * (ERROR unless set), with their stacks, since whoever reads them is debugging.
 */
export function installTestRuntime(): void {
  installRuntime({
    logger: createLogger('trace', 'temporal-sdk', process.stderr),
    level: configSchema.shape.REPLYFLOW_SDK_LOG_LEVEL.parse(process.env.REPLYFLOW_SDK_LOG_LEVEL || 'ERROR'),
  });
}

export const devServer = once(async (): Promise<DevServer> => {
  const server = await startDevServer({ port: 0 });
  teardowns.push(() => server.stop());
  return server;
});

export const timeSkipping = once(async (): Promise<TestWorkflowEnvironment> => {
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: findTemporalTestServer() } },
    client: { dataConverter: dataConverter(TEST_ENCRYPTION_KEY) },
  });
  teardowns.push(() => env.teardown());
  // The time-skipping server, like a real one, refuses search attributes it does not know.
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(
      ALL_SEARCH_ATTRIBUTES.map((key) => [
        key.name,
        key.type === 'INT'
          ? IndexedValueType.INDEXED_VALUE_TYPE_INT
          : IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
      ]),
    ),
  });
  return env;
});

export interface TestDatabase {
  /** Connected as the application's role, as replyflow connects. */
  pool: Pool;
  url: string;
  /** The admin's URL (migrations, setup, accounts): the embedded superuser, or REPLYFLOW_ADMIN_DATABASE_URL. */
  adminUrl: string;
  /** Connected as the admin, as `replyflow operator …` connects. */
  adminPool: Pool;
}

/**
 * DATABASE_URL when set (e.g. a PostgreSQL you run; its admin in REPLYFLOW_ADMIN_DATABASE_URL, else
 * the same role), else an embedded one in a temp dir. Set up as the admin sets up a deployment: the
 * application role's privileges, and the seal key of the tests' payload key (id `default`).
 */
export const database = once(async (): Promise<TestDatabase> => {
  let url = process.env.DATABASE_URL;
  let adminUrl = process.env.REPLYFLOW_ADMIN_DATABASE_URL ?? url;
  if (!url || !adminUrl) {
    const parent = mkdtempSync(path.join(os.tmpdir(), 'replyflow-pg-'));
    chmodSync(parent, 0o755); // as root, PostgreSQL runs as its own user and must reach the data dir
    const pg = await startEmbeddedPostgres({ dir: path.join(parent, 'data'), ephemeral: true });
    teardowns.push(() => pg.stop());
    url = pg.url;
    adminUrl = pg.adminUrl;
  }
  const adminPool = createPool(adminUrl, 4);
  teardowns.unshift(() => adminPool.end());
  const appRole = decodeURIComponent(new URL(url).username);
  await setUpDatabase(adminPool, {
    appRole: appRole === decodeURIComponent(new URL(adminUrl).username) ? undefined : appRole,
    payloadKeys: { default: Buffer.from(TEST_ENCRYPTION_KEY, 'base64') },
  });
  const pool = createPool(url, 20);
  teardowns.unshift(() => pool.end());
  return { pool, url, adminUrl, adminPool };
});

/** The workers' bundle, as `replyflow start` gets it (cached on disk by its sources). */
export const workflowBundle = once((): Promise<WorkflowBundleOption> => workflowBundleFor(WORKFLOWS_PATH));

/** Stops what a helper started on first use (e.g. a receiver for the CLI's codec server) with the servers. */
export function stopWithServers(stop: () => Promise<void>): void {
  teardowns.unshift(stop);
}

export async function stopServers(): Promise<void> {
  for (const teardown of teardowns.splice(0)) await teardown().catch(() => {});
}
