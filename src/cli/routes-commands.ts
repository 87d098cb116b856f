// `replyflow routes check [FILE]` and `replyflow routes try FILE --event sample.json`: a route file
// (docs/targets.md) checked, and tried on a provider's own delivery body, without starting anything,
// reaching any server or sending anything. The check is the one the worker runs at start.
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { type Command, InvalidArgumentError } from 'commander';
import { type Config, loadConfig } from '../config';
import { RouteMappingError } from '../errors';
import { type EffectPlan, PLAN_STEP, SANDBOX_MODES, type StepPlan, stepBusinessKey } from '../model';
import { WebhookPayloadError } from '../providers/errors';
import { isSampleProvider, readSample, recogniseProvider, SAMPLE_PROVIDERS } from '../providers/sample';
import type { InboundEvent } from '../providers/types';
import {
  answersByDefault,
  checkRouteFile,
  configuredPlans,
  defaultPlans,
  mismatch,
  type RouteCheckOptions,
  type RouteSet,
  workerRouteChecks,
} from '../routes';
import { createTargets } from '../targets';
import { TargetError } from '../targets/errors';
import { fillUrl } from '../targets/http';
import { fileTenantDirectory, type TenantDirectory } from '../tenants/directory';
import { TenantsFileError } from '../tenants/errors';
import { loadTenantsFile, NO_TENANTS_FILE } from '../tenants/tenants-file';
import { type CliContext, EXIT, report } from './command';
import { RoutesInputError } from './errors';
import { type CliIo, printLine } from './io';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * TENANTS_FILE's entries without their secrets: whether it lists LINE channels decides whether the
 * worker registers the LINE target. A file with problems lists none here (the worker's start says why).
 */
function listedTenants(config: Config): TenantDirectory {
  if (!config.TENANTS_FILE) return fileTenantDirectory(NO_TENANTS_FILE);
  try {
    return fileTenantDirectory(loadTenantsFile(config.TENANTS_FILE));
  } catch (err) {
    if (!(err instanceof TenantsFileError)) throw err;
    return fileTenantDirectory(NO_TENANTS_FILE);
  }
}

/**
 * What a worker started with this environment would check besides the file: its `${NAME}` values,
 * the built-in targets its credentials enable, its Standard Webhooks sources. The sandbox targets
 * count as there unless SANDBOX_ENABLED=false, since `replyflow start` runs the sandbox by default.
 */
function environmentChecks(env: NodeJS.ProcessEnv): RouteCheckOptions {
  const config = loadConfig(env);
  const targets = createTargets(
    { ...config, SANDBOX_ENABLED: false },
    {},
    { tenants: listedTenants(config) },
  );
  const sandbox = config.SANDBOX_ENABLED !== false;
  return workerRouteChecks(
    config,
    (target) => targets.has(target) || (sandbox && (SANDBOX_MODES as readonly string[]).includes(target)),
    env,
  );
}

/** Prints each problem and their count; @returns the exit code for them. */
function printProblems(io: CliIo, file: string, problems: string[]): number {
  for (const problem of problems) printLine(io.stdout, problem);
  printLine(io.stdout, `${file}: ${plural(problems.length, 'problem')}`);
  return EXIT.badInput;
}

function check(io: CliIo, fileArgument: string | undefined, options: { fileOnly?: boolean }): number {
  const file = fileArgument ?? io.env.ROUTES_FILE;
  if (!file) throw new RoutesInputError('no route file: give one (routes check FILE) or set ROUTES_FILE');
  const { set, problems } = checkRouteFile(file, options.fileOnly ? {} : environmentChecks(io.env));
  if (!set) return printProblems(io, file, problems);
  const endpoints = Object.keys(set.endpoints).length;
  printLine(
    io.stdout,
    `${file}: no problems (${plural(set.routes.length, 'route')}, ${plural(endpoints, 'endpoint')}), ${
      options.fileOnly ? 'the file alone (--file-only)' : 'checked against this environment'
    }`,
  );
  return EXIT.ok;
}

/** `--header 'Name: value'`, repeatable. */
function collectHeader(value: string, headers: IncomingHttpHeaders = {}): IncomingHttpHeaders {
  const colon = value.indexOf(':');
  if (colon <= 0) throw new InvalidArgumentError("expected 'Name: value'");
  return { ...headers, [value.slice(0, colon).trim().toLowerCase()]: value.slice(colon + 1).trim() };
}

interface TryOptions {
  event: string;
  provider?: string;
  header?: IncomingHttpHeaders;
}

/** The sample's provider: given, or recognised from the body and headers. */
function providerOf(body: Buffer, options: TryOptions): string {
  const choices = `(${SAMPLE_PROVIDERS.join(', ')})`;
  if (options.provider !== undefined) {
    if (!isSampleProvider(options.provider))
      throw new RoutesInputError(`--provider: unknown provider "${options.provider}" ${choices}`);
    return options.provider;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const recognised = recogniseProvider(parsed, options.header ?? {});
  if (!recognised)
    throw new RoutesInputError(`cannot tell which provider sent the sample: add --provider ${choices}`);
  return recognised;
}

/** What the receiver would answer the sample with, as one line: its 400 carries the issues, never the body. */
function refusal(err: WebhookPayloadError): string {
  const issues = err.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`);
  return `the receiver would refuse this sample (400): ${issues.join('; ') || err.message}`;
}

/** Destination values that are credentials (a LINE reply token, a Slack response_url) are not printed. */
function shownDestination(destination: Record<string, string>): string {
  return JSON.stringify(
    Object.fromEntries(
      Object.entries(destination).map(([key, value]) => [
        key,
        /token|responseurl/i.test(key) ? '(hidden)' : value,
      ]),
    ),
  );
}

/** Stands in for the effect id, which only exists once the effect is claimed. */
const EFFECT_ID_MARK = 'EFFECTIDMARK0';

/** The request an HTTP step would make, or the permanent failure the target would end it with. */
function requestLine(step: StepPlan, set: RouteSet): { line: string; fails: boolean } | undefined {
  if (!step.target.startsWith('http:')) return undefined;
  const endpoint = set.endpoints[step.target.slice(5)];
  if (!endpoint) return undefined;
  try {
    const url = fillUrl(endpoint.url, EFFECT_ID_MARK, step, step.target).replace(
      EFFECT_ID_MARK,
      '{effectId}',
    );
    return { line: `request ${endpoint.method} ${url}`, fails: false };
  } catch (err) {
    if (!(err instanceof TargetError)) throw err;
    return { line: `would fail when sent: ${err.message}; ${err.details.fix ?? ''}`.trimEnd(), fails: true };
  }
}

function contentLine(step: StepPlan): string {
  if (step.content.kind === 'reply')
    return 'text written by the responder when the event runs (not asked here)';
  return `body ${JSON.stringify(step.content.body)}`;
}

/** Prints one planned effect, step by step; @returns whether a step would fail when sent. */
function printEffect(io: CliIo, effect: EffectPlan, set: RouteSet): boolean {
  let fails = false;
  printLine(io.stdout, `  effect ${effect.integration}, business key ${effect.businessKey}`);
  for (const step of effect.steps) {
    printLine(
      io.stdout,
      `    step ${step.name}: ${step.target}, business key ${stepBusinessKey(effect, step)}`,
    );
    const request = requestLine(step, set);
    if (request) printLine(io.stdout, `      ${request.line}`);
    fails ||= request?.fails ?? false;
    printLine(io.stdout, `      destination ${shownDestination(step.destination)}`);
    printLine(io.stdout, `      ${contentLine(step)}`);
  }
  return fails;
}

/**
 * Whether the default route answers the event, as a worker with this environment's Slack settings
 * decides (answersByDefault). A Slack thread reply is answered when replyflow answered the thread's
 * parent, which only the database knows: said so, and not counted.
 */
async function defaultReplies(
  event: InboundEvent,
  env: NodeJS.ProcessEnv,
): Promise<{ answers: boolean; note?: string }> {
  const config = loadConfig(env);
  let askedParent = false;
  const answers = await answersByDefault(
    event,
    { replyTo: config.SLACK_REPLY_TO, allIn: config.SLACK_REPLY_TO_ALL_IN },
    async () => {
      askedParent = true;
      return false;
    },
  );
  return askedParent
    ? { answers, note: "a reply in a thread: answered only if replyflow answered the thread's parent" }
    : { answers };
}

/** One event against every route of the file; @returns whether its workflow would fail. */
async function tryEvent(
  io: CliIo,
  event: InboundEvent,
  set: RouteSet,
  env: NodeJS.ProcessEnv,
): Promise<boolean> {
  printLine(
    io.stdout,
    `${event.provider} ${event.eventType} ${event.eventId}, read as the receiver reads it (signature not checked)`,
  );
  let matching = 0;
  let effects = 0;
  let steps = 0;
  let fails = false;
  let mappingFailed = false;
  for (const route of set.routes) {
    const why = mismatch(route, event);
    if (why) {
      printLine(io.stdout, `route ${route.name}: no match (${why})`);
      continue;
    }
    matching += 1;
    try {
      // One route at a time, so that each says its own outcome; the worker plans them all at once.
      const [effect] = configuredPlans({ ...set, routes: [route] }, event);
      printLine(io.stdout, `route ${route.name}: matches`);
      fails = printEffect(io, effect!, set) || fails;
      effects += 1;
      steps += effect!.steps.length;
    } catch (err) {
      if (!(err instanceof RouteMappingError)) throw err;
      mappingFailed = true;
      // The words the failed event shows at run time (its status, search attributes and alert).
      printLine(io.stdout, `route ${route.name}: matches, but the event would fail: ${err.message}`);
    }
  }
  const byDefault = await defaultReplies(event, env);
  const defaults = byDefault.answers ? defaultPlans(event) : [];
  if (defaults.length === 0)
    printLine(
      io.stdout,
      `default route: no chat reply for this event${byDefault.note ? ` (${byDefault.note})` : ''}`,
    );
  else {
    printLine(io.stdout, 'default route: matches');
    for (const effect of defaults) fails = printEffect(io, effect, set) || fails;
  }
  const matched = `${matching} of ${plural(set.routes.length, 'route')} match`;
  const outcome = mappingFailed
    ? `; the event would park as failed at run time (step ${PLAN_STEP}) and send nothing`
    : `: ${plural(effects, 'effect')}, ${plural(steps, 'step')}${fails ? ', a step would fail when sent' : ''}`;
  printLine(io.stdout, `${matched}${outcome}; nothing was sent and nothing started`);
  return mappingFailed || fails;
}

async function tryRoutes(io: CliIo, routeFile: string, options: TryOptions): Promise<number> {
  // Nothing is sent, so what the worker's environment lacks does not matter here: the file alone.
  const { set, problems } = checkRouteFile(routeFile);
  if (!set) {
    printProblems(io, routeFile, problems);
    throw new RoutesInputError(
      `fix the route file first (replyflow routes check ${routeFile} lists the same)`,
    );
  }
  let body: Buffer;
  try {
    body = readFileSync(options.event);
  } catch (err) {
    throw new RoutesInputError(
      `--event: cannot read ${options.event} (${(err as NodeJS.ErrnoException).code})`,
    );
  }
  const provider = providerOf(body, options);
  if (provider === 'github' && options.header?.['x-github-event'] === undefined)
    throw new RoutesInputError(
      "GitHub sends the event name in a header, not in the body: add --header 'X-GitHub-Event: <name>' (issues, pull_request, push, …)",
    );
  let result: Awaited<ReturnType<typeof readSample>>;
  try {
    result = await readSample({ provider, body, headers: options.header ?? {} });
  } catch (err) {
    if (err instanceof WebhookPayloadError) throw new RoutesInputError(refusal(err));
    throw err;
  }
  if (result.kind === 'answer') {
    printLine(
      io.stdout,
      `the receiver would answer ${result.status} ${JSON.stringify(result.body)} and start nothing`,
    );
    return EXIT.ok;
  }
  if (result.kind === 'ignored') {
    printLine(io.stdout, `the receiver would acknowledge it and start nothing (${result.reason})`);
    return EXIT.ok;
  }
  let fails = false;
  for (const event of result.events) fails = (await tryEvent(io, event, set, io.env)) || fails;
  return fails ? EXIT.notDone : EXIT.ok;
}

/** Runs a routes command: its exit code, or one line for what went wrong. */
function routesAction<A extends unknown[]>(ctx: CliContext, work: (...args: A) => number | Promise<number>) {
  return async (...args: A) => {
    try {
      ctx.setExitCode(await work(...args));
    } catch (err) {
      if (err instanceof RoutesInputError) {
        printLine(ctx.io.stderr, `replyflow: ${err.message}`);
        ctx.setExitCode(EXIT.badInput);
      } else ctx.setExitCode(report(ctx.io, err));
    }
  };
}

export function registerRoutesCommands(program: Command, ctx: CliContext): void {
  const routes = program
    .command('routes')
    .description(
      'check the route file (ROUTES_FILE, docs/targets.md) or try it on a sample event; starts nothing',
    );
  routes
    .command('check')
    .argument('[file]', 'the route file (JSON if it ends in .json, else YAML); default ROUTES_FILE')
    .description(
      'list every problem of a route file, one per line with its path (exit 2), or say it is valid (exit 0); ' +
        "checked as a worker with this environment checks it (the variables its headers name, its targets' credentials)",
    )
    .option(
      '--file-only',
      'check the file alone, not what this environment lacks (e.g. in CI, away from the secrets)',
    )
    .action(
      routesAction(ctx, (file: string | undefined, options: { fileOnly?: boolean }) =>
        check(ctx.io, file, options),
      ),
    );
  routes
    .command('try')
    .argument('<file>', 'the route file')
    .requiredOption(
      '--event <sample.json>',
      "a delivery body exactly as the provider sends it (Slack's envelope, LINE's destination and events, a Stripe event, …)",
    )
    .option(
      '--provider <name>',
      `who sent it (${SAMPLE_PROVIDERS.join(', ')}); default: recognised from the body (Slack, LINE, Stripe) or X-GitHub-Event`,
    )
    .option(
      '-H, --header <name: value>',
      "a header the provider sends with it, repeatable; GitHub needs 'X-GitHub-Event: <name>' (ids the transport carries get stand-ins)",
      collectHeader,
    )
    .description(
      'read the sample as the receiver would (no signature check), then print which routes match and the ' +
        'effects they would plan (targets, destinations, business keys, mapped bodies; never header values); ' +
        'sends nothing, starts nothing. Exit 0, 1 when the event would fail at run time, 2 for bad input',
    )
    .action(routesAction(ctx, (file: string, options: TryOptions) => tryRoutes(ctx.io, file, options)));
}
