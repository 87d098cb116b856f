// The three registries (src/targets/registry.ts, src/providers/registry.ts, DECISIONS in
// workflows/messages.ts): each entry is complete, and every place that lists targets, providers or
// decisions reads its list from them, so that adding one is one module and one entry.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { roleFor } from '../../activities/decisions';
import type { CliContext } from '../../src/cli/command';
import { registerWorkCommands } from '../../src/cli/work-commands';
import { configSchema } from '../../src/config';
import { REDACTED_PATHS } from '../../src/logger';
import { OPERATOR_ROLES } from '../../src/model';
import { EVENT_TYPES } from '../../src/providers/event-types';
import { createProviders, PROVIDER_SETTINGS } from '../../src/providers/index';
import { PROVIDERS } from '../../src/providers/registry';
import { isSampleProvider, SAMPLE_PROVIDERS } from '../../src/providers/sample';
import { createTargets, TARGET_SETTINGS } from '../../src/targets/index';
import { TARGETS, type TargetDocsRow } from '../../src/targets/registry';
import {
  DECISION_NAMES,
  DECISION_SIGNALS,
  DECISION_UPDATES,
  DECISIONS,
  decisionList,
  RESOLVE_ACTIONS,
} from '../../workflows/messages';
import { testConfig } from '../support/system';

const ROOT = path.resolve(__dirname, '../..');
const SETTINGS = new Set(Object.keys(configSchema.shape));

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = path.join(dir, name);
    if (statSync(path.join(ROOT, rel)).isDirectory()) return sourceFiles(rel);
    return rel.endsWith('.ts') ? [rel] : [];
  });
}
const SOURCES = ['src', 'activities', 'workflows'].flatMap(sourceFiles);

/** The files among src/, activities/ and workflows/ whose text matches `pattern`, but `except`. */
function filesMatching(pattern: RegExp, except: string[]): string[] {
  return SOURCES.filter(
    (file) => !except.includes(file) && pattern.test(readFileSync(path.join(ROOT, file), 'utf8')),
  );
}

function redacts(header: string): boolean {
  return REDACTED_PATHS.includes(`headers.${header}`) || REDACTED_PATHS.includes(`headers["${header}"]`);
}

/** The rows of docs/targets.md's table of promises, cell by cell. */
function docsTargetRows(): string[][] {
  const text = readFileSync(path.join(ROOT, 'docs/targets.md'), 'utf8');
  const section = text.slice(text.indexOf('## What each target promises'), text.indexOf('Sources:'));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) =>
      line
        .trim()
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    );
}

const DOCS_COLUMNS: (keyof TargetDocsRow)[] = [
  'target',
  'enabledBy',
  'idempotencyKey',
  'lookup',
  'consistencyDelay',
  'retryable',
  'permanent',
  'unknown',
];

describe('registries', () => {
  describe('targets (src/targets/registry.ts)', () => {
    it('gives every entry its settings, what enables it, its secret headers and a full docs row', () => {
      for (const entry of TARGETS) {
        const at = entry.docs.target;
        assert.ok(entry.enabledBy.trim(), `${at}: enabledBy`);
        assert.ok(entry.settings.length > 0, `${at}: settings`);
        for (const setting of entry.settings)
          assert.ok(SETTINGS.has(setting), `${at}: ${setting} is a setting`);
        for (const header of entry.secretHeaders)
          assert.equal(header, header.toLowerCase(), `${at}: ${header}`);
        for (const column of DOCS_COLUMNS) assert.ok(entry.docs[column].trim(), `${at}: docs.${column}`);
        for (const name of entry.names)
          assert.ok(entry.docs.target.includes(`\`${name}\``), `${at} names ${name}`);
      }
      const names = TARGETS.flatMap((t) => t.names);
      assert.equal(new Set(names).size, names.length, 'each name once');
    });

    it('is the table of docs/targets.md, row by row', () => {
      assert.deepEqual(
        docsTargetRows(),
        TARGETS.map((entry) => DOCS_COLUMNS.map((column) => entry.docs[column])),
      );
    });

    it('is what createTargets registers, the route check names and the logs redact', () => {
      assert.deepEqual(
        TARGET_SETTINGS,
        Object.fromEntries(TARGETS.flatMap((t) => t.names.map((name) => [name, t.enabledBy]))),
      );
      const everything = createTargets(
        testConfig({
          SLACK_BOT_TOKEN: 'x',
          SLACK_SIGNING_SECRET: 's',
          LINE_CHANNEL_ACCESS_TOKEN: 'y',
          GITHUB_TOKEN: 'z',
        }),
        {
          orders: {
            url: 'https://orders.example/api',
            method: 'POST',
            headers: {},
            idempotency: { header: 'Idempotency-Key', format: 'quoted', honoured: true },
            idField: 'id',
            consistencyDelayMs: 0,
          },
        },
      );
      assert.deepEqual(
        [...everything.keys()].sort(),
        [...TARGETS.flatMap((t) => t.names), 'http:orders'].sort(),
      );
      for (const header of TARGETS.flatMap((t) => t.secretHeaders)) assert.ok(redacts(header), header);
    });

    it('is the only place that makes a target adapter', () => {
      assert.deepEqual(
        filesMatching(/(?<!function )\b(slack|slackResponse|line|github|http|sandbox)Target\(/, [
          'src/targets/registry.ts',
        ]),
        [],
      );
    });
  });

  describe('providers (src/providers/registry.ts)', () => {
    it('gives every entry its settings, what enables it, its secret and its signature headers', () => {
      for (const entry of PROVIDERS) {
        assert.ok(entry.enabledBy.trim(), `${entry.name}: enabledBy`);
        assert.ok(SETTINGS.has(entry.secret), `${entry.name}: ${entry.secret} is a setting`);
        assert.ok(
          entry.settings.includes(entry.secret as never),
          `${entry.name}: its secret among its settings`,
        );
        for (const setting of entry.settings) assert.ok(SETTINGS.has(setting), `${entry.name}: ${setting}`);
        assert.ok(entry.signatureHeaders.length > 0, `${entry.name}: signature headers`);
        const module = readFileSync(
          path.join(ROOT, 'src/providers', `${entry.name === 'std' ? 'standard-webhooks' : entry.name}.ts`),
          'utf8',
        );
        // Its module reads the header, or a newer one of the same name (GitHub's -256 beside the SHA-1 one).
        for (const header of entry.signatureHeaders)
          assert.ok(
            module.includes(`'${header}`) || (entry.name === 'sandbox' && header === 'webhook-signature'),
            `${entry.name} reads ${header}`,
          );
      }
      assert.equal(new Set(PROVIDERS.map((p) => p.name)).size, PROVIDERS.length, 'each name once');
    });

    it('is what createProviders makes, the receiver refuses with, routes know and the logs redact', () => {
      const config = testConfig({
        SLACK_SIGNING_SECRET: 's'.repeat(20),
        LINE_CHANNEL_SECRET: 'l'.repeat(20),
        GITHUB_WEBHOOK_SECRET: 'g'.repeat(20),
        STRIPE_WEBHOOK_SECRET: 'whsec_stripe',
        STANDARD_WEBHOOKS_SECRETS: `shop=whsec_${Buffer.from('k'.repeat(24)).toString('base64')}`,
      });
      const made = createProviders(config, { githubBodies: { admit: async () => true } });
      assert.deepEqual(
        made.map((p) => p.name),
        PROVIDERS.map((p) => p.name),
      );
      assert.deepEqual(
        [...PROVIDER_SETTINGS],
        PROVIDERS.map(({ name, enabledBy, secret }) => [name, { enabledBy, secret }]),
      );
      assert.deepEqual(
        Object.keys(EVENT_TYPES),
        PROVIDERS.filter((p) => p.eventTypes).map((p) => p.name),
      );
      assert.deepEqual(
        SAMPLE_PROVIDERS,
        PROVIDERS.map((p) => p.sampleName ?? p.name),
      );
      for (const name of ['slack', 'line', 'github', 'stripe', 'sandbox', 'std.shop'])
        assert.ok(isSampleProvider(name), name);
      for (const header of PROVIDERS.flatMap((p) => p.signatureHeaders)) assert.ok(redacts(header), header);
    });

    it('is the only place that makes a provider', () => {
      assert.deepEqual(
        filesMatching(
          /(?<!function )\b(slack|line|github|stripe|sandbox|standardWebhooks|revokingSlack)Provider\(/,
          ['src/providers/registry.ts'],
        ),
        [],
      );
    });
  });

  describe('decisions (DECISIONS in workflows/messages.ts)', () => {
    it('gives every decision its form, its CLI line, its update and signal, and a role', () => {
      for (const name of DECISION_NAMES) {
        const spec = DECISIONS[name];
        assert.ok(spec.shape.includes('"workflowId"') && spec.shape.includes('"reason"'), `${name}: shape`);
        assert.ok(spec.cli.trim(), `${name}: cli`);
        assert.equal(DECISION_UPDATES[name].name, name);
        assert.equal(DECISION_SIGNALS[name].name, name);
        // A decision is a role of its own, or its actions are (asking and approving stay apart).
        const roles = spec.takesAction
          ? RESOLVE_ACTIONS.map((a) => roleFor(name, a))
          : [roleFor(name, undefined)];
        for (const role of roles)
          assert.ok(role && (OPERATOR_ROLES as readonly string[]).includes(role), `${name}: ${role}`);
      }
      assert.equal(
        DECISION_NAMES.filter((n) => DECISIONS[n].takesAction).length,
        1,
        'one decision takes an action',
      );
      const implied = DECISION_NAMES.flatMap((n) => DECISIONS[n].impliedBy ?? []);
      assert.equal(new Set(implied).size, implied.length, 'each state implies one decision at most');
    });

    it('is what the CLI offers', () => {
      const program = new Command();
      registerWorkCommands(program, {} as CliContext);
      for (const name of DECISION_NAMES) {
        const command = program.commands.find((c) => c.name() === name);
        assert.ok(command, `replyflow ${name}`);
        assert.equal(command.description(), DECISIONS[name].cli);
      }
      const action = program.commands
        .find((c) => c.name() === 'resolve')!
        .options.find((o) => o.long === '--action');
      assert.deepEqual(action?.argChoices, [...RESOLVE_ACTIONS]);
    });

    it('is the only list of the decisions in src/, activities/ and workflows/', () => {
      const names = DECISION_NAMES.map((n) => `['"]${n}['"]`).join('\\s*,\\s*');
      assert.deepEqual(filesMatching(new RegExp(`\\[\\s*${names}\\s*\\]`), ['workflows/messages.ts']), []);
      assert.deepEqual(
        filesMatching(new RegExp(decisionList().replace(/ /g, '\\s+')), ['workflows/messages.ts']),
        [],
      );
      assert.deepEqual(
        filesMatching(/\[\s*'mark-sent',\s*'resend',\s*'discard'\s*\]/, ['workflows/messages.ts']),
        [],
      );
    });
  });
});
