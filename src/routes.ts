// Which effects an event asks for. The default route answers a chat message addressed to the bot
// once per (provider, conversation, source message, reply kind); configured routes (ROUTES_FILE, JSON
// or YAML) add effects mapped from event fields, e.g. an order registered and then inventory reserved.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { parseDuration } from './config';
import { errorMessage } from './failures';
import type { EffectPlan, StepPlan } from './model';
import { slackAddressing } from './providers/slack';
import type { InboundEvent } from './providers/types';
import { TARGET_SETTINGS, type TargetRegistry } from './targets';
import type { HttpEndpoint } from './targets/http';

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
export type AnswerLookup = (target: string, businessKey: string) => Promise<boolean>;

/**
 * Whether the default route answers this event (DESIGN.md §2, "Default routes"). Slack: a mention, a
 * direct message, a reply in a thread the bot is in, and any person's message where the settings ask
 * for every one; a plain channel message is people talking among themselves. Every other provider's
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

const routeSchema = z
  .object({
    name: name('route'),
    when: z
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
      .strict(),
    /** The Integration search attribute; defaults to the route's name. */
    integration: z.string().min(1).optional(),
    /** What makes two events the same business operation, e.g. `order:{shop}:{order}:{operationId}`. */
    businessKey: template,
    /** Tells apart operations on one business object (refund R1 vs R2): a retry of R1 keeps R1's id. */
    operationId: template.optional(),
    steps: z.array(stepSchema).min(1),
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

type RouteSpec = z.infer<typeof routeSchema>;

export interface Route {
  name: string;
  provider: string;
  eventTypes: string[];
  fields: Record<string, Scalar[]>;
  integration: string;
  businessKey: string;
  operationId?: string;
  steps: RouteSpec['steps'];
}

export interface RouteSet {
  endpoints: Record<string, HttpEndpoint>;
  routes: Route[];
}

/** Thrown at worker start when the route file has problems; lists every one with its path. */
export class RouteFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`Invalid route file ${file}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'RouteFileError';
  }
}

/** Thrown when a matching route needs an event field the event lacks (the event fails, visibly). */
export class RouteMappingError extends Error {
  override name = 'RouteMappingError';
}

/** `['routes', 2, 'steps', 0, 'target']` → `routes[2].steps[0].target` */
function formatPath(parts: readonly PropertyKey[]): string {
  return parts.reduce<string>(
    (out, part) =>
      typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part),
    '',
  );
}

/** Reads and validates ROUTES_FILE (`.json`, else YAML). Environment references in headers resolve from `env`. */
export function loadRouteFile(file: string, env: NodeJS.ProcessEnv = process.env): RouteSet {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new RouteFileError(file, [
      `cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    ]);
  }
  return parseRoutes(text, path.extname(file) === '.json' ? 'json' : 'yaml', env, file);
}

export function parseRoutes(
  text: string,
  format: 'json' | 'yaml',
  env: NodeJS.ProcessEnv = {},
  source = '(routes)',
): RouteSet {
  let raw: unknown;
  if (format === 'json') {
    try {
      raw = JSON.parse(text);
    } catch (err) {
      throw new RouteFileError(source, [`not valid JSON: ${errorMessage(err)}`]);
    }
  } else {
    const doc = YAML.parseDocument(text);
    if (doc.errors.length > 0)
      throw new RouteFileError(
        source,
        doc.errors.map((e) => `not valid YAML: ${e.message}`),
      );
    raw = doc.toJS() ?? {};
  }
  const problems: string[] = [];
  const outline = validate(fileSchema, raw, [], problems);
  if (!outline) throw new RouteFileError(source, problems);
  const endpoints: Record<string, HttpEndpoint> = {};
  for (const [key, value] of Object.entries(outline.endpoints)) {
    const spec = validate(endpointSchema, value, ['endpoints', key], problems);
    const endpoint = spec && toEndpoint(spec, `endpoints.${key}`, env, problems);
    if (endpoint) endpoints[key] = endpoint;
  }
  const names = new Set<string>();
  const routes: Route[] = [];
  for (const [index, value] of outline.routes.entries()) {
    const spec = validate(routeSchema, value, ['routes', index], problems);
    if (!spec) continue;
    const at = `routes[${index}]`;
    if (names.has(spec.name)) problems.push(`${at}.name: another route is also named "${spec.name}"`);
    names.add(spec.name);
    checkRoute(spec, at, outline.endpoints, problems);
    routes.push({
      name: spec.name,
      provider: spec.when.provider,
      eventTypes: typeof spec.when.eventType === 'string' ? [spec.when.eventType] : spec.when.eventType,
      fields: Object.fromEntries(
        Object.entries(spec.when.fields).map(([k, v]) => [k, Array.isArray(v) ? v : [v]]),
      ),
      integration: spec.integration ?? spec.name,
      businessKey: spec.businessKey,
      operationId: spec.operationId,
      steps: spec.steps,
    });
  }
  if (problems.length > 0) throw new RouteFileError(source, problems);
  return { endpoints, routes };
}

/** Parses `value`, or adds each issue to `problems` with its full path. */
function validate<T>(
  schema: z.ZodType<T>,
  value: unknown,
  at: PropertyKey[],
  problems: string[],
): T | undefined {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues)
    problems.push(`${formatPath([...at, ...issue.path]) || '(file)'}: ${issue.message}`);
  return undefined;
}

function toEndpoint(
  spec: z.infer<typeof endpointSchema>,
  at: string,
  env: NodeJS.ProcessEnv,
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
    headers[header] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
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

/** Placeholders that the route can fill, and the step names and targets it uses. */
function checkRoute(spec: RouteSpec, at: string, endpoints: Record<string, unknown>, problems: string[]) {
  const checkTemplate = (value: string, where: string, allowOperationId: boolean) => {
    for (const [, field] of value.matchAll(PLACEHOLDER)) {
      if (!FIELD_PATH.test(field!))
        problems.push(`${where}: {${field}} is not a field path such as {data.object.id}`);
      else if (field === 'operationId' && !allowOperationId)
        problems.push(
          `${where}: {operationId} needs the route's operationId${spec.operationId === undefined ? ' (not set)' : ''}`,
        );
    }
  };
  const hasOperation = spec.operationId !== undefined;
  if (spec.operationId !== undefined) checkTemplate(spec.operationId, `${at}.operationId`, false);
  checkTemplate(spec.businessKey, `${at}.businessKey`, hasOperation);
  const stepNames = new Set<string>();
  spec.steps.forEach((step, index) => {
    const stepAt = `${at}.steps[${index}]`;
    if (stepNames.has(step.name))
      problems.push(`${stepAt}.name: another step of this route is also named "${step.name}"`);
    stepNames.add(step.name);
    if (step.target.startsWith('http:') && !(step.target.slice(5) in endpoints))
      problems.push(
        `${stepAt}.target: no endpoint named "${step.target.slice(5)}" (endpoints: ${Object.keys(endpoints).join(', ') || 'none'})`,
      );
    for (const [key, value] of Object.entries(step.destination))
      checkTemplate(value, `${stepAt}.destination.${key}`, hasOperation);
    if (step.text !== undefined) checkTemplate(step.text, `${stepAt}.text`, hasOperation);
    forEachString(step.body, (value, where) => checkTemplate(value, `${stepAt}.body${where}`, hasOperation));
  });
}

function forEachString(value: unknown, fn: (value: string, where: string) => void, where = ''): void {
  if (typeof value === 'string') fn(value, where);
  else if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) forEachString(item, fn, `${where}[${i}]`);
  } else if (value && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) forEachString(item, fn, `${where}.${key}`);
}

/** Route targets that this worker has not registered (e.g. `slack` without SLACK_BOT_TOKEN). */
export function routeTargetProblems(set: RouteSet, targets: TargetRegistry): string[] {
  const problems: string[] = [];
  set.routes.forEach((route, r) => {
    route.steps.forEach((step, s) => {
      if (targets.has(step.target)) return;
      const setting = TARGET_SETTINGS[step.target];
      problems.push(
        `routes[${r}].steps[${s}].target: target "${step.target}" is not configured${setting ? ` (set ${setting})` : ''}`,
      );
    });
  });
  return problems;
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
  if (value === undefined || value === null)
    throw new RouteMappingError(
      `route ${scope.route.name}: ${where} needs {${field}}, which the event lacks`,
    );
  return value;
}

function render(template: string, scope: Scope, where: string): string {
  return template.replace(PLACEHOLDER, (_, field: string) => {
    const value = requireField(scope, field, where);
    if (typeof value === 'object')
      throw new RouteMappingError(
        `route ${scope.route.name}: ${where} needs {${field}} to be a string or number`,
      );
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

function matches(route: Route, event: InboundEvent): boolean {
  if (route.provider !== event.provider || !route.eventTypes.includes(event.eventType)) return false;
  const scope: Scope = { event, route };
  return Object.entries(route.fields).every(([field, allowed]) =>
    allowed.includes(fieldOf(scope, field) as Scalar),
  );
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
 * @throws RouteMappingError when a matching route cannot be mapped (the activity fails the workflow).
 */
export function planner(set?: RouteSet): Planner {
  return (event, { defaultReply = true } = {}) => [
    ...(defaultReply ? defaultPlans(event) : []),
    ...(set ? configuredPlans(set, event) : []),
  ];
}
