// The compose file's one-shot namespace job, run for real: deploy/temporal/setup-namespace.sh with the
// environment docker-compose.yml gives it, against the test run's Temporal dev server and with the same
// `temporal` CLI commands the admin-tools image has. Twice, because `docker compose up` reruns it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { findTemporalCli, PROJECT_ROOT } from '../../src/temporal/binaries';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import { devServer } from '../support/servers';
import { uniqueId } from '../support/system';
import { readCompose } from './compose-file';

const { IndexedValueType } = temporal.api.enums.v1;
const run = promisify(execFile);

describe('the compose namespace job (deploy/temporal/setup-namespace.sh on a real Temporal)', function () {
  this.timeout(120_000);

  it('creates the namespace with its retention and every search attribute, and can run again', async () => {
    const server = await devServer();
    const namespace = uniqueId('ns-');
    const composeEnv = readCompose().services['temporal-namespace']!.environment!;
    const env = {
      PATH: process.env.PATH,
      TEMPORAL_CLI: findTemporalCli(),
      TEMPORAL_ADDRESS: server.address,
      NAMESPACE: namespace,
      RETENTION: String(composeEnv.RETENTION),
      SEARCH_ATTRIBUTES: String(composeEnv.SEARCH_ATTRIBUTES),
    };
    const script = path.join(PROJECT_ROOT, 'deploy/temporal/setup-namespace.sh');
    await run('sh', [script], { env });
    await run('sh', [script], { env });

    const connection = await Connection.connect({ address: server.address });
    try {
      const described = await connection.workflowService.describeNamespace({ namespace });
      const retention = Number(described.config?.workflowExecutionRetentionTtl?.seconds);
      assert.equal(retention, 7 * 86_400);
      const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
      const expected = Object.fromEntries(
        ALL_SEARCH_ATTRIBUTES.map((key) => [
          key.name,
          key.type === 'INT'
            ? IndexedValueType.INDEXED_VALUE_TYPE_INT
            : IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
        ]),
      );
      assert.deepEqual(customAttributes, expected);
    } finally {
      await connection.close();
    }
  });
});
