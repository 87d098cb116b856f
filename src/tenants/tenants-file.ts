// TENANTS_FILE: the accounts of a deployment that does not change them at run time, in YAML — LINE
// channels (the webhook's destination → channel secret and access token) and Slack teams (team → bot
// token). Each secret is named by an environment variable, never written in the file, so the file can
// sit in a repository. Receivers and workers read it once at start (a change needs a restart); its
// entries answer before the tenant store's (src/tenants/directory.ts), as source 'file'.
import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { z } from 'zod';
import { type Config, processEnvironment } from '../config';
import type { TenantCredential, TenantRecord } from '../db/tenant-credentials';
import { TenantsFileError } from './errors';
import { tenantOf } from './tenant-id';

/**
 * A LINE channel's webhook destination: the bot's user id (`U` and 32 hex digits, "Your user ID" in
 * the LINE Developers console), not the numeric channel id.
 */
export const LINE_DESTINATION = /^U[0-9a-f]{32}$/;
/** A Slack workspace (`T…`) or, for an org-wide install, an Enterprise Grid organisation (`E…`). */
export const SLACK_TEAM = /^[TE][A-Z0-9]{2,}$/;

export const LINE_DESTINATION_HELP =
  "the bot's user id, U and 32 hex digits (LINE Developers console, Basic settings, “Your user ID”; not the numeric channel id)";
export const SLACK_TEAM_HELP = 'a Slack team id such as T0123ABCD (or E… for an org-wide install)';

/** The secret a LINE channel's credential holds (tenant store and file alike). */
export const lineChannelSecret = z.object({
  channelSecret: z.string().min(1),
  accessToken: z.string().min(1),
});
export type LineChannelSecret = z.infer<typeof lineChannelSecret>;

/** The secret a Slack team's credential holds when it is given by hand (file, `replyflow tenant add`). */
export const slackTeamSecret = z.object({ botToken: z.string().min(1) });

const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected the name of an environment variable, e.g. LINE_SECRET_SHOP');
const name = z.string().min(1).max(200).optional();

const lineEntry = z.strictObject({
  destination: z.string().regex(LINE_DESTINATION, `expected ${LINE_DESTINATION_HELP}`),
  channelSecretEnv: envName,
  accessTokenEnv: envName,
  name,
});
const slackEntry = z.strictObject({
  team: z.string().regex(SLACK_TEAM, `expected ${SLACK_TEAM_HELP}`),
  botTokenEnv: envName,
  name,
});
const fileSchema = z.strictObject({
  line: z.array(z.unknown()).default([]),
  slack: z.array(z.unknown()).default([]),
});

/** Keys that would hold a secret in the file, and the key that names its variable instead. */
const INLINE_SECRETS: Record<string, string> = {
  channelSecret: 'channelSecretEnv',
  accessToken: 'accessTokenEnv',
  botToken: 'botTokenEnv',
  token: 'botTokenEnv',
  secret: 'channelSecretEnv',
};

/** TENANTS_FILE read and checked: every entry by tenant. */
export interface TenantsFile {
  /** The file's path; undefined when TENANTS_FILE is unset. */
  readonly file?: string;
  /** Each entry, its secret read from the environment (absent when the file was checked without one). */
  readonly entries: ReadonlyMap<string, TenantCredential>;
}

export const NO_TENANTS_FILE: TenantsFile = { entries: new Map() };

type Path = readonly PropertyKey[];
const formatPath = (parts: Path) =>
  parts.reduce<string>(
    (out, part) =>
      typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part),
    '',
  );

function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
  at: Path,
  problems: string[],
): z.infer<S> | undefined {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    const where = formatPath([...at, ...issue.path]) || '(file)';
    // zod's message for an unknown key names it; its value is never quoted.
    problems.push(`${where}: ${issue.message}`);
  }
  return undefined;
}

/**
 * Checks the file's text; with `env`, reads each named secret from it (a variable that is unset or
 * empty is a problem). Without `env` (a listing), the entries carry no secret.
 */
export function checkTenantsText(
  text: string,
  env?: NodeJS.ProcessEnv,
  loadedAt = new Date(),
): { entries?: Map<string, TenantCredential>; problems: string[] } {
  const doc = YAML.parseDocument(text);
  if (doc.errors.length > 0)
    return {
      problems: doc.errors.map(
        (e) => `(file): not valid YAML: ${e.message.split('\n')[0]!.replace(/:$/, '')}`,
      ),
    };
  const problems: string[] = [];
  const raw: unknown = doc.toJS() ?? {};
  validate(fileSchema, raw, [], problems);
  // Past an outline problem (an unknown top-level key, say) the entries are still checked.
  const lists = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const outline = {
    line: Array.isArray(lists.line) ? (lists.line as unknown[]) : [],
    slack: Array.isArray(lists.slack) ? (lists.slack as unknown[]) : [],
  };
  const entries = new Map<string, TenantCredential>();
  const secretOf = (at: Path, variable: string) => {
    const value = env?.[variable];
    if (env && (value === undefined || value.trim() === ''))
      problems.push(`${formatPath(at)}: environment variable ${variable} is not set`);
    return value?.trim() ?? '';
  };
  const add = (
    at: Path,
    tenant: string,
    entryName: string | undefined,
    secret: () => Record<string, string>,
  ) => {
    if (entries.has(tenant)) {
      problems.push(`${formatPath(at)}: ${tenant} is listed twice`);
      return;
    }
    const provider = tenant.slice(0, tenant.indexOf(':'));
    const record: TenantRecord = {
      tenant,
      provider,
      source: 'file',
      details: entryName ? { name: entryName } : {},
      version: 0,
      createdAt: loadedAt,
      updatedAt: loadedAt,
    };
    entries.set(tenant, { record, ...(env ? { secret: secret() } : {}) });
  };
  const inlineSecrets = (value: unknown, at: Path): boolean => {
    if (!value || typeof value !== 'object') return false;
    const found = Object.keys(value).filter((key) => key in INLINE_SECRETS);
    for (const key of found)
      problems.push(
        `${formatPath([...at, key])}: a secret is never written in the file: name its environment variable with ${INLINE_SECRETS[key]}`,
      );
    return found.length > 0;
  };
  for (const [index, value] of outline.line.entries()) {
    const at = ['line', index];
    if (inlineSecrets(value, at)) continue;
    const entry = validate(lineEntry, value, at, problems);
    if (!entry) continue;
    add(at, tenantOf('line', entry.destination)!, entry.name, () => ({
      channelSecret: secretOf([...at, 'channelSecretEnv'], entry.channelSecretEnv),
      accessToken: secretOf([...at, 'accessTokenEnv'], entry.accessTokenEnv),
    }));
  }
  for (const [index, value] of outline.slack.entries()) {
    const at = ['slack', index];
    if (inlineSecrets(value, at)) continue;
    const entry = validate(slackEntry, value, at, problems);
    if (!entry) continue;
    add(at, tenantOf('slack', entry.team)!, entry.name, () => ({
      botToken: secretOf([...at, 'botTokenEnv'], entry.botTokenEnv),
    }));
  }
  return problems.length > 0 ? { problems } : { entries, problems };
}

/**
 * Reads and checks a tenants file; `env` is where its secrets are read from (omit it to list the
 * entries without their secrets).
 * @throws TenantsFileError listing every problem
 */
export function loadTenantsFile(file: string, env?: NodeJS.ProcessEnv): TenantsFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new TenantsFileError(file, [
      `(file): cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    ]);
  }
  const { entries, problems } = checkTenantsText(text, env);
  if (!entries) throw new TenantsFileError(file, problems);
  return { file, entries };
}

/** What a receiver or a worker loads at start: TENANTS_FILE with its secrets, or nothing when it is unset. */
export function tenantsFileOf(
  config: Pick<Config, 'TENANTS_FILE'>,
  env: NodeJS.ProcessEnv = processEnvironment(),
): TenantsFile {
  return config.TENANTS_FILE ? loadTenantsFile(config.TENANTS_FILE, env) : NO_TENANTS_FILE;
}
