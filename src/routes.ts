// Which effects an event asks for. The default route answers a chat message addressed to the bot
// once per (provider, conversation, source message, reply kind); configured routes (ROUTES_FILE, JSON
// or YAML) add effects mapped from event fields, e.g. an order registered and then inventory reserved.
// A route file is checked as a whole before anything runs, every problem at once
// (`replyflow routes check`).

import { readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { type Config, parseDuration, processEnvironment } from './config';
import { type MappingFailure, RouteFileError, RouteMappingError } from './errors';
import { errorMessage } from './failures';
import type { EffectPlan, StepPlan } from './model';
import { EVENT_TYPES, STANDARD_WEBHOOKS_PREFIX, sendsEventType } from './providers/event-types';
import { slackAddressing } from './providers/slack';
import { SLACK_RESPONSE_TARGET } from './providers/slack-interactions';
import type { InboundEvent } from './providers/types';
import { closest, didYouMean } from './suggest';
import { TARGET_SETTINGS } from './targets';
import type { HttpEndpoint } from './targets/http';
import { tenantProviderOfTarget } from './tenants/tenant-id';

/** The business key of a chat reply: two event ids for the same message map to the same key. */
export function chatBusinessKey(
  event: InboundEvent,
  kind: string,
  messageId = event.message?.id,
): string | undefined {
  if (!event.conversation || messageId === undefined) return undefined;
  return `chat:${event.provider}:${event.conversation.id}:${messageId}:${kind}`;
}

/** Slack messages the default route answers beyond those addressed to the bot (SLACK_REPLY_TO, …_ALL_IN). */
export interface SlackReplySettings {
  /** `all`: every person's message in every channel the bot is in. */
  replyTo: 'mentions' | 'all';
  /** Channels where every person's message is answered. */
  allIn: readonly string[];
}

/** Whether replyflow answered (or is answering) the chat message whose reply has this key on `target`. */
type AnswerLookup = (target: string, businessKey: string) => Promise<boolean>;

/**
 * Whether the default route answers this event (DESIGN.md §2, "Default routes"). Slack: a mention, a
 * direct message, a reply in a thread the bot is in, and any person's message where the settings ask
 * for every one; a plain channel message is people talking among themselves. A slash command or an
 * interaction with a response_url is always answered. Every other provider's
 * chat message is addressed to the bot by being sent at all.
 *
 * "A thread the bot is in" is the bot's own thread (`parent_user_id`), or one whose parent replyflow
 * answered, asked of our own effects (`answered`: one probe of their unique business-key index) rather
 * than of Slack: `conversations.replies` for every thread reply in every channel would be a
 * rate-limited Web API call (Tier 3; one a minute for apps sold outside the Marketplace, docs/slack.md)
 * on the worker's path, where the effect row of the parent's answer is already ours. What it does not
 * see is a thread where the bot answered a later mention but not the parent: there a person mentions
 * the bot again.
 */
export async function answersByDefault(
  event: InboundEvent,
  slack: SlackReplySettings,
  answered: AnswerLookup,
): Promise<boolean> {
  if (event.provider !== 'slack' || !event.replyTo) return true;
  // A command, a button, a message shortcut or a modal that asked for an answer: addressed to the bot
  // by being used at all. The provider gives a reply destination only to those with a response_url.
  if (event.replyTo.target === SLACK_RESPONSE_TARGET) return true;
  const addressing = slackAddressing(event.payload);
  if (!addressing) return false;
  const everyMessage = slack.replyTo === 'all' || slack.allIn.includes(addressing.channel);
  switch (addressing.kind) {
    case 'mention':
    case 'direct':
      return true;
    case 'channel':
      return everyMessage;
    case 'thread': {
      if (everyMessage || addressing.parentIsBot) return true;
      const parentKey = chatBusinessKey(event, event.replyTo.kind, addressing.threadTs);
      return parentKey !== undefined && answered(event.replyTo.target, parentKey);
    }
  }
}

export function defaultPlans(event: InboundEvent): EffectPlan[] {
  if (!event.replyTo) return [];
  const businessKey = chatBusinessKey(event, event.replyTo.kind);
  if (!businessKey) return [];
  return [
    {
      integration: event.provider,
      businessKey,
      conversationId: event.conversation?.id,
      steps: [
        {
          name: 'reply',
          target: event.replyTo.target,
          destination: event.replyTo.destination,
          content: { kind: 'reply' },
        },
      ],
    },
  ];
}

// ---- The route file ----------------------------------------------------------------------------

/** `{data.object.id}`: a field of the event's payload; `{operationId}`, `{$provider}`, `{$eventType}`: see docs/targets.md. */
const PLACEHOLDER = /\{([^{}]*)\}/g;
const FIELD_PATH = /^(\$provider|\$eventType|operationId|[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)$/;
const NAME = /^[a-z0-9][a-z0-9_-]*$/i;

type Scalar = string | number | boolean;
const scalar = z.union([z.string(), z.number(), z.boolean()], {
  error: 'expected a string, number or boolean',
});
const template = z.string().min(1);
const name = (what: string) =>
  z.string().regex(NAME, `${what} names use letters, digits, - and _ (and start with a letter or digit)`);

const stepSchema = z
  .object({
    name: name('step'),
    target: z.string().min(1),
    /** Target-specific values (Slack channel, GitHub issue, URL template values), as templates. */
    destination: z.record(z.string(), template).default({}),
    /** The JSON body for an HTTP target: strings are templates; `"{path}"` alone keeps the field's type. */
    body: z.unknown().optional(),
    /** A chat message mapped from the event. */
    text: template.optional(),
    /** The responder writes the text, as for a chat reply. */
    reply: z.literal(true).optional(),
  })
  .strict()
  .refine(
    (s) => [s.body !== undefined, s.text !== undefined, s.reply !== undefined].filter(Boolean).length === 1,
    {
      message: 'give exactly one of body, text or reply: true',
    },
  );

/** What a route waits for. The provider and event types are also checked against what providers send (checkWhen). */
const whenSchema = z
  .object({
    provider: z.string().min(1),
    eventType: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)], {
      error: 'expected an event type or a list of them',
    }),
    /** Equality on payload fields; a list means any of these values. */
    fields: z
      .record(
        z.string().regex(FIELD_PATH, 'expected a dotted field path'),
        z.union([scalar, z.array(scalar).min(1)], { error: 'expected a value or a list of values' }),
      )
      .default({}),
  })
  .strict();

/** A route's own fields: `when` and each step are checked on their own, so one bad part hides no other problem. */
const routeSchema = z
  .object({
    name: name('route'),
    when: z.unknown(),
    /** The Integration search attribute; defaults to the route's name. */
    integration: z.string().min(1).optional(),
    /** What makes two events the same business operation, e.g. `order:{shop}:{order}:{operationId}`. */
    businessKey: template,
    /** Tells apart operations on one business object (refund R1 vs R2): a retry of R1 keeps R1's id. */
    operationId: template.optional(),
    steps: z.array(z.unknown()).min(1),
  })
  .strict();

const endpointSchema = z
  .object({
    url: template,
    method: z.enum(['POST', 'PUT', 'PATCH']).default('POST'),
    /** Values may name environment variables as `${NAME}` (for secrets); they are never logged. */
    headers: z.record(z.string(), z.string()).default({}),
    idempotency: z
      .object({
        header: z.string().min(1).default('Idempotency-Key'),
        format: z.enum(['quoted', 'plain']).default('quoted'),
        honoured: z.boolean().default(true),
      })
      .strict()
      .default({ header: 'Idempotency-Key', format: 'quoted', honoured: true }),
    idField: z.string().min(1).default('id'),
    lookup: z
      .object({ url: template, idField: z.string().min(1).default('id') })
      .strict()
      .optional(),
    consistencyDelay: z.string().default('0s'),
  })
  .strict();

/** The outline only: each endpoint and route is validated on its own, so one bad entry hides no other problem. */
const fileSchema = z
  .object({
    endpoints: z.record(name('endpoint'), z.unknown()).default({}),
    routes: z.array(z.unknown()).default([]),
  })
  .strict();

type StepSpec = z.infer<typeof stepSchema>;
type WhenSpec = z.infer<typeof whenSchema>;

interface Route {
  name: string;
  provider: string;
  eventTypes: string[];
  fields: Record<string, Scalar[]>;
  integration: string;
  businessKey: string;
  operationId?: string;
  steps: StepSpec[];
}

export interface RouteSet {
  endpoints: Record<string, HttpEndpoint>;
  routes: Route[];
}

/** What an operator does about a mapping failure at run time. */
export function mappingFailureFix(failure: MappingFailure): string {
  const what = failure.problem === 'missing' ? 'is missing from the event' : 'is not a string or number';
  return `route ${failure.route}: field ${failure.field} ${what}; fix ROUTES_FILE, restart the workers, then reprocess`;
}

/**
 * What a route file is checked against besides itself: the worker that runs it. A fact left out is not
 * checked (`replyflow routes check --file-only`, `routes try`), so a file can be checked away from the
 * worker's secrets.
 */
export interface RouteCheckOptions {
  /** Where `${NAME}` in endpoint headers resolves from. */
  env?: NodeJS.ProcessEnv;
  /** Whether the worker registered a built-in target (`slack` needs SLACK_BOT_TOKEN, SLACK_CLIENT_ID or Slack teams in TENANTS_FILE). */
  targetConfigured?: (target: string) => boolean;
  /** The Standard Webhooks sources with a secret (STANDARD_WEBHOOKS_SECRETS); empty: any well-formed one. */
  standardWebhooksSources?: readonly string[];
}

/** What a worker with `config` checks a route file against; `targetConfigured` says which targets it registers. */
export function workerRouteChecks(
  config: Config,
  targetConfigured: (target: string) => boolean,
  env: NodeJS.ProcessEnv = processEnvironment(),
): RouteCheckOptions {
  return { env, targetConfigured, standardWebhooksSources: Object.keys(config.STANDARD_WEBHOOKS_SECRETS) };
}

/** A checked route file: its routes and endpoints when it has no problem, else every problem. */
interface RouteFileCheck {
  set?: RouteSet;
  problems: string[];
}

type Path = readonly PropertyKey[];

/** `['routes', 2, 'steps', 0, 'target']` → `routes[2].steps[0].target` */
function formatPath(parts: Path): string {
  return parts.reduce<string>(
    (out, part) =>
      typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part),
    '',
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads and checks a route file (`.json`, else YAML) without throwing: what `replyflow routes check` prints. */
export function checkRouteFile(file: string, options: RouteCheckOptions = {}): RouteFileCheck {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return { problems: [`(file): cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`] };
  }
  return checkRouteText(text, path.extname(file) === '.json' ? 'json' : 'yaml', options);
}

/**
 * Reads and validates ROUTES_FILE (`.json`, else YAML). Environment references in headers resolve from `options.env`.
 * @throws RouteFileError listing every problem
 */
export function loadRouteFile(
  file: string,
  options: RouteCheckOptions = { env: processEnvironment() },
): RouteSet {
  const { set, problems } = checkRouteFile(file, options);
  if (!set) throw new RouteFileError(file, problems);
  return set;
}

/** @throws RouteFileError listing every problem; `env`: where `${NAME}` in headers resolves from. */
export function parseRoutes(
  text: string,
  format: 'json' | 'yaml',
  env: NodeJS.ProcessEnv = {},
  source = '(routes)',
): RouteSet {
  const { set, problems } = checkRouteText(text, format, { env });
  if (!set) throw new RouteFileError(source, problems);
  return set;
}

function parseDocument(text: string, format: 'json' | 'yaml'): { raw: unknown } | { problems: string[] } {
  if (format === 'json') {
    try {
      return { raw: JSON.parse(text) };
    } catch (err) {
      return { problems: [`(file): not valid JSON: ${errorMessage(err)}`] };
    }
  }
  const doc = YAML.parseDocument(text);
  // The library's messages end in a drawing of the line; the position in the first line says enough.
  if (doc.errors.length > 0)
    return {
      problems: doc.errors.map(
        (e) => `(file): not valid YAML: ${e.message.split('\n')[0]!.replace(/:$/, '')}`,
      ),
    };
  return { raw: doc.toJS() ?? {} };
}

/** What the checks of one file share: where problems go, the worker facts, the file's endpoints. */
interface FileContext {
  problems: string[];
  options: RouteCheckOptions;
  /** Every endpoint the file names, valid or not (a step may refer to it either way). */
  endpointNames: string[];
  /** The URL templates of each endpoint, as written (whatever else is wrong with the endpoint). */
  endpointUrls: Record<string, string[]>;
}

/** Checks a whole route file, listing every problem it finds, each with its path in the file. */
export function checkRouteText(
  text: string,
  format: 'json' | 'yaml',
  options: RouteCheckOptions = {},
): RouteFileCheck {
  const document = parseDocument(text, format);
  if ('problems' in document) return document;
  const problems: string[] = [];
  validate(fileSchema, document.raw, [], problems);
  // Past an outline problem (an unknown top-level key, say) the parts that are well formed are still checked.
  const outline = isRecord(document.raw) ? document.raw : {};
  const endpointSpecs = isRecord(outline.endpoints) ? outline.endpoints : {};
  const endpoints: Record<string, HttpEndpoint> = {};
  for (const [key, value] of Object.entries(endpointSpecs)) {
    const spec = validate(endpointSchema, value, ['endpoints', key], problems);
    const endpoint = spec && toEndpoint(spec, `endpoints.${key}`, options.env, problems);
    if (endpoint) endpoints[key] = endpoint;
  }
  const endpointUrls = Object.fromEntries(
    Object.entries(endpointSpecs).map(([key, spec]) => {
      const raw = isRecord(spec) ? spec : {};
      const lookup = isRecord(raw.lookup) ? raw.lookup.url : undefined;
      return [key, [raw.url, lookup].filter((url): url is string => typeof url === 'string')];
    }),
  );
  const file: FileContext = { problems, options, endpointNames: Object.keys(endpointSpecs), endpointUrls };
  const names = new Set<string>();
  const routes: Route[] = [];
  for (const [index, value] of (Array.isArray(outline.routes) ? outline.routes : []).entries()) {
    const route = checkRoute(value, index, file);
    const routeName = isRecord(value) ? value.name : undefined;
    if (typeof routeName === 'string' && names.has(routeName))
      problems.push(`routes[${index}].name: another route is also named "${routeName}"`);
    if (typeof routeName === 'string') names.add(routeName);
    if (route) routes.push(route);
  }
  return problems.length > 0 ? { problems } : { set: { endpoints, routes }, problems };
}

/**
 * Parses `value`, or adds each issue to `problems` with its full path. A key the schema does not know
 * is a problem of its own, with the field probably meant; the field that typo left missing is not
 * said again (`typos` collects those fields, for parts checked on their own).
 */
function validate<T>(
  schema: z.ZodType<T>,
  value: unknown,
  at: Path,
  problems: string[],
  typos = new Set<string>(),
): T | undefined {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const lines: (string | { missing: Path; line: string })[] = [];
  for (const issue of parsed.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      const fields = fieldsAt(schema, issue.path);
      for (const key of issue.keys) {
        const meant = closest(key, fields);
        if (meant.length === 1) typos.add(formatPath([...issue.path, meant[0]!]));
        const hint = meant.length > 0 ? didYouMean(key, fields) : ` (fields here: ${fields.join(', ')})`;
        lines.push(`${formatPath([...at, ...issue.path, key])}: unknown field${hint}`);
      }
      continue;
    }
    const line = `${formatPath([...at, ...issue.path]) || '(file)'}: ${issue.message}`;
    lines.push(
      issue.path.length > 0 && valueAt(value, issue.path) === undefined
        ? { missing: issue.path, line }
        : line,
    );
  }
  for (const line of lines)
    if (typeof line === 'string') problems.push(line);
    else if (!typos.has(formatPath(line.missing))) problems.push(line.line);
  return undefined;
}

function valueAt(value: unknown, at: Path): unknown {
  return at.reduce<unknown>(
    (current, key) =>
      typeof current === 'object' && current !== null
        ? (current as Record<PropertyKey, unknown>)[key]
        : undefined,
    value,
  );
}

/** The fields of the object schema at `at` inside `schema` (through optional, default, array and record). */
function fieldsAt(schema: z.ZodType, at: Path): string[] {
  interface Def {
    type: string;
    innerType?: z.ZodType;
    shape?: Record<string, z.ZodType>;
    element?: z.ZodType;
    valueType?: z.ZodType;
  }
  const defOf = (s: z.ZodType) => (s as unknown as { def: Def }).def;
  const unwrap = (s: z.ZodType): z.ZodType => {
    const def = defOf(s);
    return def.innerType && ['optional', 'default', 'nullable'].includes(def.type)
      ? unwrap(def.innerType)
      : s;
  };
  let current: z.ZodType | undefined = unwrap(schema);
  for (const key of at) {
    const def = defOf(current);
    current = def.shape?.[String(key)] ?? (def.type === 'array' ? def.element : def.valueType);
    if (!current) return [];
    current = unwrap(current);
  }
  return Object.keys(defOf(current).shape ?? {});
}

function toEndpoint(
  spec: z.infer<typeof endpointSchema>,
  at: string,
  env: NodeJS.ProcessEnv | undefined,
  problems: string[],
): HttpEndpoint | undefined {
  const before = problems.length;
  for (const [where, url] of [
    ['url', spec.url],
    ['lookup.url', spec.lookup?.url],
  ] as const) {
    if (url === undefined) continue;
    try {
      const parsed = new URL(url.replace(PLACEHOLDER, 'x'));
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
        problems.push(`${at}.${where}: expected an http(s) URL`);
    } catch {
      problems.push(`${at}.${where}: not a URL`);
    }
  }
  const consistencyDelayMs = parseDuration(spec.consistencyDelay);
  if (consistencyDelayMs === undefined)
    problems.push(`${at}.consistencyDelay: expected a duration such as 500ms, 30s or 2m`);
  const headers: Record<string, string> = {};
  for (const [header, value] of Object.entries(spec.headers)) {
    // Without an environment (a check of the file alone) the references stay as written.
    headers[header] = !env
      ? value
      : value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
          const resolved = env[variable];
          if (resolved === undefined || resolved === '')
            problems.push(`${at}.headers.${header}: environment variable ${variable} is not set`);
          return resolved ?? '';
        });
  }
  if (problems.length > before) return undefined;
  const { consistencyDelay: _, ...rest } = spec;
  return { ...rest, headers, consistencyDelayMs: consistencyDelayMs ?? 0 };
}

/** One route: its own fields, what it waits for, its templates and each of its steps. */
function checkRoute(value: unknown, index: number, file: FileContext): Route | undefined {
  const at: Path = ['routes', index];
  const before = file.problems.length;
  const typos = new Set<string>();
  const spec = validate(routeSchema, value, at, file.problems, typos);
  const raw = isRecord(value) ? value : {};
  // `wehn:` is said once, as a typo, not again as a missing `when`.
  const when =
    raw.when === undefined && typos.has('when') ? undefined : checkWhen(raw.when, [...at, 'when'], file);
  const operation = { set: typeof raw.operationId === 'string' };
  if (typeof raw.operationId === 'string')
    checkTemplate(raw.operationId, [...at, 'operationId'], { usable: false, ...operation }, file.problems);
  if (typeof raw.businessKey === 'string')
    checkTemplate(
      raw.businessKey,
      [...at, 'businessKey'],
      { usable: operation.set, ...operation },
      file.problems,
    );
  const steps = (Array.isArray(raw.steps) ? raw.steps : []).map((step, s) =>
    checkStep(step, [...at, 'steps', s], operation.set, file),
  );
  const stepNames = new Set<string>();
  for (const [s, step] of (Array.isArray(raw.steps) ? raw.steps : []).entries()) {
    const stepName = isRecord(step) ? step.name : undefined;
    if (typeof stepName !== 'string') continue;
    if (stepNames.has(stepName))
      file.problems.push(
        `${formatPath([...at, 'steps', s, 'name'])}: another step of this route is also named "${stepName}"`,
      );
    stepNames.add(stepName);
  }
  if (!spec || !when || file.problems.length > before) return undefined;
  return {
    name: spec.name,
    provider: when.provider,
    eventTypes: typeof when.eventType === 'string' ? [when.eventType] : when.eventType,
    fields: Object.fromEntries(Object.entries(when.fields).map(([k, v]) => [k, Array.isArray(v) ? v : [v]])),
    integration: spec.integration ?? spec.name,
    businessKey: spec.businessKey,
    operationId: spec.operationId,
    steps: steps.filter((step): step is StepSpec => step !== undefined),
  };
}

/** Placeholders must be field paths; `{operationId}` only where the route sets one (and not inside it). */
function checkTemplate(
  value: string,
  at: Path,
  operation: { usable: boolean; set: boolean },
  problems: string[],
): void {
  const where = formatPath(at);
  for (const [, field] of value.matchAll(PLACEHOLDER)) {
    if (!FIELD_PATH.test(field!))
      problems.push(`${where}: {${field}} is not a field path such as {data.object.id}`);
    else if (field === 'operationId' && !operation.usable)
      problems.push(
        `${where}: {operationId} needs the route's operationId${operation.set ? '' : ' (not set)'}`,
      );
  }
}

/** The providers a route may name, as messages list them. */
const PROVIDERS = [...Object.keys(EVENT_TYPES), `${STANDARD_WEBHOOKS_PREFIX}<source>`];

/** `when`: its fields, then whether its provider exists and sends the event types it names. */
function checkWhen(value: unknown, at: Path, file: FileContext): WhenSpec | undefined {
  const spec = validate(whenSchema, value, at, file.problems);
  const raw = isRecord(value) ? value : {};
  if (typeof raw.provider !== 'string' || raw.provider === '') return spec;
  const provider = checkProvider(raw.provider, [...at, 'provider'], file);
  if (!provider) return spec;
  const types: [unknown, Path][] = Array.isArray(raw.eventType)
    ? raw.eventType.map((type, i) => [type, [...at, 'eventType', i]])
    : [[raw.eventType, [...at, 'eventType']]];
  for (const [type, typeAt] of types)
    if (typeof type === 'string' && type !== '') checkEventType(provider, type, typeAt, file.problems);
  return spec;
}

/**
 * @returns the provider whose event types the route's should be checked against: the one named, or
 * the one a typo of it surely means (so that its event types are checked in the same round); none for
 * a Standard Webhooks source, whose senders name their own types.
 */
function checkProvider(provider: string, at: Path, file: FileContext): string | undefined {
  const where = formatPath(at);
  if (Object.hasOwn(EVENT_TYPES, provider)) return provider;
  const sources = file.options.standardWebhooksSources ?? [];
  if (provider.startsWith(STANDARD_WEBHOOKS_PREFIX)) {
    const source = provider.slice(STANDARD_WEBHOOKS_PREFIX.length);
    if (!NAME.test(source))
      file.problems.push(
        `${where}: "${provider}" is no Standard Webhooks source (${STANDARD_WEBHOOKS_PREFIX}<source>: letters, digits, - and _)`,
      );
    else if (sources.length > 0 && !sources.includes(source))
      file.problems.push(
        `${where}: no Standard Webhooks source "${source}" in STANDARD_WEBHOOKS_SECRETS${didYouMean(
          provider,
          sources.map((s) => `${STANDARD_WEBHOOKS_PREFIX}${s}`),
        )}`,
      );
    return undefined;
  }
  const candidates = [...Object.keys(EVENT_TYPES), ...sources.map((s) => `${STANDARD_WEBHOOKS_PREFIX}${s}`)];
  const meant = closest(provider, candidates);
  file.problems.push(
    `${where}: unknown provider "${provider}"${meant.length > 0 ? didYouMean(provider, candidates) : ` (providers: ${PROVIDERS.join(', ')})`}`,
  );
  return meant.length === 1 && Object.hasOwn(EVENT_TYPES, meant[0]!) ? meant[0] : undefined;
}

/** Lists of at most this many event types are given in full when none is close to a typo. */
const LISTED_IN_FULL = 20;

function checkEventType(provider: string, type: string, at: Path, problems: string[]): void {
  if (sendsEventType(provider, type)) return;
  const known = EVENT_TYPES[provider]!;
  const unknown = `${formatPath(at)}: unknown ${provider} event type "${type}"`;
  // GitHub names its events with their action (`issues.opened`): the bare name never arrives.
  const actions = known.filter((entry) => entry.startsWith(`${type}.`));
  if (provider === 'github' && actions.length > 0) {
    const shown = actions.slice(0, 3).join(', ');
    problems.push(
      `${unknown} (GitHub adds the action: ${shown}${actions.length > 3 ? `, … ${actions.length} in all` : ''})`,
    );
    return;
  }
  const near = didYouMean(type, known);
  if (near) problems.push(`${unknown}${near}`);
  else if (known.length <= LISTED_IN_FULL)
    problems.push(`${unknown} (${provider} sends: ${known.join(', ')})`);
  else problems.push(`${unknown} (the event types ${provider} sends: src/providers/sdk-event-types.ts)`);
}

/** The targets a step may name besides `http:<endpoint>`. */
const BUILT_IN_TARGETS = Object.keys(TARGET_SETTINGS);

/** One step: its fields, its target, its templates, and the URL values an HTTP endpoint needs. */
function checkStep(value: unknown, at: Path, operationSet: boolean, file: FileContext): StepSpec | undefined {
  const spec = validate(stepSchema, value, at, file.problems);
  const raw = isRecord(value) ? value : {};
  if (typeof raw.target === 'string' && raw.target !== '') checkTarget(raw.target, [...at, 'target'], file);
  if (!spec) return undefined;
  const operation = { usable: operationSet, set: operationSet };
  for (const [key, template] of Object.entries(spec.destination))
    checkTemplate(template, [...at, 'destination', key], operation, file.problems);
  if (spec.text !== undefined) checkTemplate(spec.text, [...at, 'text'], operation, file.problems);
  forEachString(spec.body, (template, where) =>
    checkTemplate(template, [...at, ...where], operation, file.problems),
  );
  const endpoint = spec.target.startsWith('http:') ? spec.target.slice(5) : undefined;
  const urls = endpoint === undefined ? undefined : file.endpointUrls[endpoint];
  if (urls) checkUrlValues(spec, endpoint!, urls, [...at, 'destination'], operationSet, file.problems);
  return spec;
}

function checkTarget(target: string, at: Path, file: FileContext): void {
  const where = formatPath(at);
  if (target.startsWith('http:')) {
    if (!file.endpointNames.includes(target.slice(5)))
      file.problems.push(
        `${where}: no endpoint named "${target.slice(5)}" (endpoints: ${file.endpointNames.join(', ') || 'none'})`,
      );
    return;
  }
  const { targetConfigured } = file.options;
  if (targetConfigured?.(target)) return;
  if (!BUILT_IN_TARGETS.includes(target)) {
    const candidates = [...BUILT_IN_TARGETS, ...file.endpointNames.map((e) => `http:${e}`)];
    const near = didYouMean(target, candidates);
    file.problems.push(
      `${where}: unknown target "${target}"${near || ` (targets: ${[...BUILT_IN_TARGETS, 'http:<endpoint>'].join(', ')})`}`,
    );
  } else if (targetConfigured)
    file.problems.push(`${where}: target "${target}" is not configured (set ${TARGET_SETTINGS[target]})`);
}

/**
 * An HTTP step's destination holds the values of its endpoint's URL templates: each one the URLs
 * use must be there (else every send fails), and one they do not use is a misspelt name.
 */
function checkUrlValues(
  step: StepSpec,
  endpointName: string,
  urls: string[],
  at: Path,
  operationSet: boolean,
  problems: string[],
): void {
  const wanted = new Set<string>();
  for (const url of urls)
    for (const [, name] of url.matchAll(PLACEHOLDER)) if (name !== 'effectId') wanted.add(name!);
  const given = Object.keys(step.destination);
  // The route's operation id is added to every step's destination (configuredPlans).
  for (const name of wanted)
    if (!given.includes(name) && !(name === 'operationId' && operationSet))
      problems.push(
        `${formatPath(at)}: endpoint "${endpointName}" needs {${name}} for its URL: add destination.${name}`,
      );
  for (const key of given)
    if (!wanted.has(key))
      problems.push(
        `${formatPath([...at, key])}: endpoint "${endpointName}" has no {${key}} in its URLs${didYouMean(key, wanted)}`,
      );
}

function forEachString(
  value: unknown,
  fn: (value: string, where: Path) => void,
  where: Path = ['body'],
): void {
  if (typeof value === 'string') fn(value, where);
  else if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) forEachString(item, fn, [...where, i]);
  } else if (value && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) forEachString(item, fn, [...where, key]);
}

// ---- Planning ----------------------------------------------------------------------------------

interface Scope {
  event: InboundEvent;
  route: Route;
  operationId?: string;
}

function fieldOf(scope: Scope, field: string): unknown {
  if (field === '$provider') return scope.event.provider;
  if (field === '$eventType') return scope.event.eventType;
  if (field === 'operationId') return scope.operationId;
  return field
    .split('.')
    .reduce<unknown>(
      (value, key) =>
        value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined,
      scope.event.payload,
    );
}

/** The field's value, which must exist; the message names the route and field, never a value. */
function requireField(scope: Scope, field: string, where: string): unknown {
  const value = fieldOf(scope, field);
  if (value === undefined || value === null) throw mappingError(scope, field, where, 'missing');
  return value;
}

function mappingError(
  scope: Scope,
  field: string,
  where: string,
  problem: MappingFailure['problem'],
): RouteMappingError {
  const { name, integration } = scope.route;
  return new RouteMappingError({ route: name, integration, field, where, problem });
}

function render(template: string, scope: Scope, where: string): string {
  return template.replace(PLACEHOLDER, (_, field: string) => {
    const value = requireField(scope, field, where);
    if (typeof value === 'object') throw mappingError(scope, field, where, 'not-scalar');
    return String(value);
  });
}

/** Renders a JSON body template: `"{path}"` alone keeps the field's JSON type; other strings interpolate. */
function renderBody(value: unknown, scope: Scope, where: string): unknown {
  if (typeof value === 'string') {
    const whole = /^\{([^{}]+)\}$/.exec(value);
    return whole ? requireField(scope, whole[1]!, where) : render(value, scope, where);
  }
  if (Array.isArray(value)) return value.map((item, i) => renderBody(item, scope, `${where}[${i}]`));
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, renderBody(v, scope, `${where}.${k}`)]),
    );
  return value;
}

/** Why `route` does not take `event`: the first condition it fails (`replyflow routes try` says it); none when it does. */
export function mismatch(route: Route, event: InboundEvent): string | undefined {
  if (route.provider !== event.provider) return `the provider is ${event.provider}, not ${route.provider}`;
  if (!route.eventTypes.includes(event.eventType))
    return `the event type is ${event.eventType}, not ${route.eventTypes.join(' or ')}`;
  const scope: Scope = { event, route };
  for (const [field, allowed] of Object.entries(route.fields)) {
    const value = fieldOf(scope, field);
    if (!allowed.includes(value as Scalar))
      return `${field} is ${value === undefined ? 'absent' : JSON.stringify(value)?.slice(0, 80)}, not ${allowed.map((v) => JSON.stringify(v)).join(' or ')}`;
  }
  return undefined;
}

function matches(route: Route, event: InboundEvent): boolean {
  return mismatch(route, event) === undefined;
}

/** The effects the configured routes ask for. @throws RouteMappingError when a matching route needs a missing field. */
export function configuredPlans(set: RouteSet, event: InboundEvent): EffectPlan[] {
  return set.routes
    .filter((route) => matches(route, event))
    .map((route) => {
      const scope: Scope = { event, route };
      if (route.operationId) scope.operationId = render(route.operationId, scope, 'operationId');
      const businessKey = render(route.businessKey, scope, 'businessKey');
      const steps = route.steps.map((step): StepPlan => {
        const at = `step ${step.name}`;
        const destination = Object.fromEntries(
          Object.entries(step.destination).map(([key, value]) => [
            key,
            render(value, scope, `${at} destination.${key}`),
          ]),
        );
        if (scope.operationId !== undefined) destination.operationId ??= scope.operationId;
        // A step to the event's own provider answers with the event's tenant's credential, unless the
        // route names another tenant.
        const tenant = event.tenant;
        if (tenant?.startsWith(`${tenantProviderOfTarget(step.target)}:`)) destination.tenant ??= tenant;
        const content: StepPlan['content'] = step.reply
          ? { kind: 'reply' }
          : {
              kind: 'payload',
              body:
                step.text !== undefined
                  ? { text: render(step.text, scope, `${at} text`) }
                  : renderBody(step.body, scope, `${at} body`),
            };
        return { name: step.name, target: step.target, destination, content };
      });
      return {
        integration: route.integration,
        businessKey,
        conversationId: event.conversation?.id,
        steps,
      };
    });
}

/** Plans an event's effects; `defaultReply: false` leaves the default route out (see answersByDefault). */
export type Planner = (event: InboundEvent, options?: { defaultReply?: boolean }) => EffectPlan[];

/**
 * The plan function the activities use: default chat routes plus configured ones.
 * @throws RouteMappingError when a matching route cannot be mapped (the event parks as failed).
 */
export function planner(set?: RouteSet): Planner {
  return (event, { defaultReply = true } = {}) => [
    ...(defaultReply ? defaultPlans(event) : []),
    ...(set ? configuredPlans(set, event) : []),
  ];
}
