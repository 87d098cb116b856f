// The Grafana dashboard and the Prometheus rules under deploy/ checked against what replyflow exports:
// promtool (Debian's `prometheus` package, .ci/apt-packages) parses the rules and the scrape config and
// runs the rules' unit tests; every metric the rules and the dashboard name, with the labels they
// match on, is one the receiver's and the worker's registries really serve (src/metrics.ts,
// src/worker-metrics.ts); our own metrics pass promtool's lint.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import type { Registry } from 'prom-client';
import { parse as parseYaml } from 'yaml';
import { createReceiverMetrics } from '../../src/metrics';
import { PROJECT_ROOT } from '../../src/temporal/binaries';
import { createWorkerMetrics, gateMetrics } from '../../src/worker-metrics';
import { database } from '../support/servers';

const RULES = path.join(PROJECT_ROOT, 'deploy/prometheus/alerts.yml');
const RULE_TESTS = path.join(PROJECT_ROOT, 'deploy/prometheus/alerts.test.yml');
const SCRAPE_CONFIG = path.join(PROJECT_ROOT, 'deploy/prometheus/prometheus.yml');
const DASHBOARD = path.join(PROJECT_ROOT, 'deploy/grafana/replyflow.json');
const RUNBOOK = path.join(PROJECT_ROOT, 'docs/runbook.md');
/** How a panel names the dashboard's datasource variable (Grafana's syntax, not a JS template). */
const DATASOURCE_VARIABLE = ['$', '{datasource}'].join('');
/** Labels Prometheus adds to every series it scrapes, and the series it makes itself (`up`). */
const TARGET_LABELS = ['job', 'instance'];
const SYNTHETIC: Exported = new Map([['up', { labels: new Set(TARGET_LABELS), buckets: new Set() }]]);
/** What the dashboard's queries may use of Grafana's variables, replaced by a value before parsing. */
const GRAFANA_VARIABLES: Record<string, string> = {
  $__rate_interval: '5m',
  $__interval: '1m',
  $__range: '1h',
};

/** Each sample name a scrape shows (histogram families as _bucket, _sum, _count), with its labels. */
type Exported = Map<string, { labels: Set<string>; buckets: Set<string> }>;

interface Promtool {
  code: number;
  output: string;
}

/** Runs promtool; a missing promtool fails the test, it is not a reason to skip. */
function promtool(args: string[], input?: string): Promise<Promtool> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'promtool',
      args,
      { cwd: PROJECT_ROOT, timeout: 30_000 },
      (err, stdout, stderr) => {
        if (err && (err as NodeJS.ErrnoException).code === 'ENOENT')
          reject(
            new Error(
              'promtool is not installed: apt-get install prometheus (Debian; .ci/apt-packages installs it in CI)',
            ),
          );
        else resolve({ code: err ? Number(err.code ?? 1) : 0, output: `${stdout}${stderr}` });
      },
    );
    child.stdin?.end(input ?? '');
  });
}

/** What a registry serves, read from its exposition text as Prometheus reads it. */
async function exported(registries: Registry[]): Promise<Exported> {
  const names: Exported = new Map();
  for (const registry of registries) {
    // The label names each metric was declared with (prom-client keeps them on the metric): a series
    // created on first use, such as a 503 by reason, shows none in a scrape before then.
    const labelNames = new Map(
      registry
        .getMetricsAsArray()
        .map((m) => [m.name, (m as unknown as { labelNames?: string[] }).labelNames ?? []]),
    );
    const text = await registry.metrics();
    for (const [, family, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
      const samples =
        type === 'histogram'
          ? ['_bucket', '_sum', '_count'].map((s) => family + s)
          : type === 'summary'
            ? [family!, `${family}_sum`, `${family}_count`]
            : [family!];
      for (const sample of samples) {
        const labels = new Set([...(labelNames.get(family!) ?? []), ...TARGET_LABELS]);
        if (sample.endsWith('_bucket')) labels.add('le');
        if (type === 'summary' && sample === family) labels.add('quantile');
        const buckets = new Set(
          [...text.matchAll(new RegExp(`^${sample}\\{[^}]*\\ble="([^"]+)"`, 'gm'))].map((m) => m[1]!),
        );
        names.set(sample, { labels, buckets });
      }
    }
  }
  return names;
}

interface Selector {
  metric: string;
  /** Label names and values the selector matches on, as written. */
  matchers: { label: string; value: string }[];
}

/** The series selectors of a PromQL expression, from Prometheus' own grammar; throws on a syntax error. */
function selectors(expr: string): Selector[] {
  const tree = parser.parse(expr);
  const found: Selector[] = [];
  let error: number | undefined;
  tree.iterate({
    enter(node) {
      if (node.type.isError) error ??= node.from;
      if (node.name !== 'VectorSelector') return;
      const metric = node.node.getChild('Identifier');
      if (!metric) throw new Error(`a selector without a metric name in ${expr}`);
      const text = (n: { from: number; to: number } | null) => (n ? expr.slice(n.from, n.to) : '');
      const matchers: Selector['matchers'] = [];
      for (let m = node.node.getChild('LabelMatchers')?.firstChild; m; m = m.nextSibling) {
        // Quoted names (Prometheus 3's UTF-8 form) would escape this check: the files do not use them.
        if (m.name !== 'UnquotedLabelMatcher')
          throw new Error(`write matchers as label="value", not ${text(m)}, in ${expr}`);
        matchers.push({
          label: text(m.getChild('LabelName')),
          value: JSON.parse(text(m.getChild('StringLiteral'))) as string,
        });
      }
      found.push({ metric: text(metric), matchers });
    },
  });
  if (error !== undefined) throw new Error(`PromQL syntax error at ${error} in: ${expr}`);
  return found;
}

/** What in `exprs` names a series replyflow does not export, or a label the series does not have. */
function unknownIn(exprs: string[], names: Exported): string[] {
  return exprs.flatMap((expr) =>
    selectors(expr).flatMap(({ metric, matchers }) => {
      const known = names.get(metric) ?? SYNTHETIC.get(metric);
      if (!known) return [`${metric} (in ${expr})`];
      return matchers.flatMap(({ label, value }) => {
        if (!known.labels.has(label)) return [`${metric}{${label}} (in ${expr})`];
        if (label === 'le' && !known.buckets.has(value)) return [`${metric}{le="${value}"} (in ${expr})`];
        return [];
      });
    }),
  );
}

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  annotations?: Record<string, string>;
}

const rules = (): Rule[] =>
  (parseYaml(readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

/** The queries annotation templates run (`{{ with query "…" }}`), as PromQL. */
const templateQueries = (text: string) =>
  [...text.matchAll(/\bquery\s+"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);

interface Panel {
  type: string;
  title: string;
  id: number;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: { expr: string; datasource?: { uid: string } }[];
  panels?: Panel[];
}

const dashboard = () =>
  JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    panels: Panel[];
    templating: { list: { name: string; type: string; query: string }[] };
  };
const allPanels = (panels: Panel[]): Panel[] => panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
/** A dashboard query as Prometheus receives it: Grafana's variables replaced. */
const asPromql = (expr: string) =>
  expr.replace(/\$\w+/g, (v) => {
    const value = GRAFANA_VARIABLES[v];
    if (!value) throw new Error(`the dashboard uses ${v}, which has no value here: ${expr}`);
    return value;
  });

/** GitHub's anchor for a heading. */
const anchor = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

describe('monitoring: the Grafana dashboard and the Prometheus rules under deploy/', function () {
  this.timeout(60_000);
  let names: Exported;
  let ourMetricsText = '';

  before(async () => {
    const receiver = createReceiverMetrics();
    // One observation, so that the scrape shows the histogram's buckets (the `le` values rules may use).
    receiver.ackSeconds.observe({ provider: 'slack', outcome: 'accepted' }, 0.01);
    const worker = createWorkerMetrics((await database()).pool);
    gateMetrics(worker.registry, { underPressure: false, perSecond: 2000 });
    names = await exported([receiver.registry, worker.registry]);
    ourMetricsText = (await Promise.all([receiver.registry.metrics(), worker.registry.metrics()]))
      .join('\n')
      .split('\n')
      .filter((line) => /^(# (HELP|TYPE) )?replyflow_/.test(line))
      .join('\n');
  });

  it('has rules and a scrape configuration that promtool accepts', async () => {
    const checked = await promtool(['check', 'rules', RULES]);
    assert.equal(checked.code, 0, checked.output);
    assert.match(checked.output, /SUCCESS: \d+ rules found/);
    const config = await promtool(['check', 'config', SCRAPE_CONFIG]);
    assert.equal(config.code, 0, config.output);
  });

  it('fires the alerts under test on the series that should fire them, and not on the others (promtool test rules)', async () => {
    const run = await promtool(['test', 'rules', RULE_TESTS]);
    assert.equal(run.code, 0, run.output);
    // At least two alerts are shown both quiet and firing.
    const cases = (
      parseYaml(readFileSync(RULE_TESTS, 'utf8')) as {
        tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[];
      }
    ).tests.flatMap((t) => t.alert_rule_test);
    const both = new Set(
      cases
        .filter((c) => c.exp_alerts.length > 0)
        .map((c) => c.alertname)
        .filter((name) => cases.some((c) => c.alertname === name && c.exp_alerts.length === 0)),
    );
    assert.ok(both.size >= 2, `alerts tested both ways: ${[...both].join(', ')}`);
  });

  it('fails its rule tests when an alert changes under them (the tests can fail)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'replyflow-rules-'));
    copyFileSync(RULE_TESTS, path.join(dir, 'alerts.test.yml'));
    const original = readFileSync(RULES, 'utf8');
    const loosened = original.replace(
      'max(replyflow_effects_open_oldest_seconds{status="held"}) > 900',
      'max(replyflow_effects_open_oldest_seconds{status="held"}) > 3600',
    );
    assert.notEqual(loosened, original);
    writeFileSync(path.join(dir, 'alerts.yml'), loosened);
    const run = await promtool(['test', 'rules', path.join(dir, 'alerts.test.yml')]);
    assert.equal(run.code, 1, run.output);
    assert.match(run.output, /alertname: ReplyflowHeldWork/);
  });

  it('names in its rules only metrics and labels replyflow exports', () => {
    const all = rules();
    assert.ok(all.length >= 10);
    const exprs = all.flatMap((r) => [
      r.expr,
      ...Object.values(r.annotations ?? {}).flatMap(templateQueries),
    ]);
    assert.deepEqual(unknownIn(exprs, names), []);
    // The metrics the issue asks to watch are all used.
    const used = new Set(exprs.flatMap((e) => selectors(e).map((s) => s.metric)));
    for (const metric of [
      'replyflow_webhook_ack_seconds_bucket',
      'replyflow_webhook_unavailable_total',
      'replyflow_effects_open_oldest_seconds',
      'replyflow_effect_outcomes_total',
      'replyflow_send_retries_total',
      'replyflow_alert_failures_total',
      'replyflow_metrics_query_errors_total',
      'up',
    ])
      assert.ok(used.has(metric), `${metric} in a rule`);
  });

  it('gives every alert a summary, a description and a runbook section that exists', () => {
    const headings = new Set(
      [...readFileSync(RUNBOOK, 'utf8').matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)),
    );
    for (const rule of rules().filter((r) => r.alert)) {
      const { summary, description, runbook_url: runbook } = rule.annotations ?? {};
      assert.ok(summary && description, `${rule.alert}: summary and description`);
      const [file, section] = (runbook ?? '').split('#');
      assert.equal(file, 'docs/runbook.md', `${rule.alert}: runbook_url`);
      assert.ok(headings.has(section!), `${rule.alert}: docs/runbook.md has a section #${section}`);
    }
  });

  it('names on its dashboard only metrics and labels replyflow exports, through a datasource variable', () => {
    const board = dashboard();
    assert.deepEqual(
      board.templating.list.filter((v) => v.type === 'datasource').map((v) => [v.name, v.query]),
      [['datasource', 'prometheus']],
    );
    const panels = allPanels(board.panels);
    assert.equal(new Set(panels.map((p) => p.id)).size, panels.length, 'panel ids are unique');
    const queried = panels.filter((p) => p.type !== 'row');
    assert.ok(queried.length >= 15);
    for (const panel of queried) {
      assert.ok(panel.gridPos.x + panel.gridPos.w <= 24, `${panel.title} fits the grid`);
      assert.equal(panel.datasource?.uid, DATASOURCE_VARIABLE, `${panel.title}: the datasource variable`);
      assert.ok(panel.targets?.length, `${panel.title} has a query`);
      for (const target of panel.targets!)
        assert.ok(
          [undefined, DATASOURCE_VARIABLE].includes(target.datasource?.uid),
          `${panel.title}: target`,
        );
    }
    const exprs = queried.flatMap((p) => p.targets!.map((t) => asPromql(t.expr)));
    assert.deepEqual(unknownIn(exprs, names), []);
    const used = new Set(exprs.flatMap((e) => selectors(e).map((s) => s.metric)));
    const ours = [...names.keys()].filter((n) => n.startsWith('replyflow_') && !/_(sum|count)$/.test(n));
    assert.deepEqual(
      ours.filter((n) => !used.has(n)),
      [],
      'every replyflow metric is on the dashboard',
    );
  });

  it('reports a metric or label we do not export, and refuses a query it cannot parse (the check can fail)', () => {
    assert.deepEqual(unknownIn(['sum(rate(replyflow_webhook_acks_total[5m]))'], names), [
      'replyflow_webhook_acks_total (in sum(rate(replyflow_webhook_acks_total[5m])))',
    ]);
    assert.deepEqual(unknownIn(['replyflow_effects_open{state="held"}'], names), [
      'replyflow_effects_open{state} (in replyflow_effects_open{state="held"})',
    ]);
    assert.deepEqual(unknownIn(['replyflow_webhook_ack_seconds_bucket{le="3.5"}'], names), [
      'replyflow_webhook_ack_seconds_bucket{le="3.5"} (in replyflow_webhook_ack_seconds_bucket{le="3.5"})',
    ]);
    assert.throws(() => selectors('sum(rate(replyflow_effects_open[5m])'), /PromQL syntax error/);
    assert.throws(() => selectors('{__name__="replyflow_effects_open"}'), /without a metric name/);
    assert.throws(() => selectors('replyflow_effects_open{"status"="held"}'), /label="value"/);
    assert.throws(() => asPromql('rate(replyflow_alerts_total[$window])'), /\$window/);
  });

  it('exports metrics that pass promtool check metrics', async () => {
    assert.match(ourMetricsText, /^# TYPE replyflow_effects_open_oldest_seconds gauge$/m);
    const lint = await promtool(['check', 'metrics'], `${ourMetricsText}\n`);
    assert.equal(lint.code, 0, lint.output);
  });
});
