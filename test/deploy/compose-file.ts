// Reads docker-compose.yml and .env.example the way `docker compose` does (YAML merge keys, `${…}`
// interpolation from the env file), so that the deploy tests check what Compose would run.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../../src/temporal/binaries';
import { InterpolationError } from './errors';

const COMPOSE_FILE = path.join(PROJECT_ROOT, 'docker-compose.yml');
const ENV_EXAMPLE_FILE = path.join(PROJECT_ROOT, '.env.example');

interface ComposeService {
  image?: string;
  build?: { context: string; target?: string };
  command?: string[];
  environment?: Record<string, string | number | null>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  deploy?: { replicas?: number };
  volumes?: string[];
  ports?: string[];
  entrypoint?: string[];
  restart?: string;
}

interface ComposeFile {
  services: Record<string, ComposeService>;
  [key: string]: unknown;
}

/** The compose file as written, merge keys (`<<: *replyflow`) resolved, `${…}` not yet interpolated. */
export function readCompose(): ComposeFile {
  return parse(readFileSync(COMPOSE_FILE, 'utf8'), { merge: true }) as ComposeFile;
}

/** KEY=value lines of .env.example (comments and blank lines skipped), in file order. */
export function readEnvExample(): Map<string, string> {
  const entries = new Map<string, string>();
  for (const line of readFileSync(ENV_EXAMPLE_FILE, 'utf8').split('\n')) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (match) entries.set(match[1]!, match[2]!);
  }
  return entries;
}

interface Reference {
  name: string;
  /** `-` / `:-` default, `?` / `:?` required, `+` / `:+` alternative; undefined for a plain `${NAME}`. */
  operator?: string;
  argument?: string;
}

const REFERENCE = /\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g;

export function references(text: string): Reference[] {
  const found: Reference[] = [];
  for (const match of text.matchAll(REFERENCE)) {
    if (match[0] === '$$') continue;
    const name = match[1] ?? match[4]!;
    found.push(match[2] ? { name, operator: match[2], argument: match[3] } : { name });
  }
  if (/\$\{(?![A-Za-z_][A-Za-z0-9_]*(?::?[-?+][^}]*)?\})/.test(text.replaceAll('$$', ''))) {
    throw new InterpolationError(`unsupported interpolation in ${JSON.stringify(text)}`);
  }
  return found;
}

/** Compose's interpolation of one string with `env` (unset = missing key; empty counts for `:` forms). */
export function interpolate(text: string, env: ReadonlyMap<string, string>): string {
  return text.replace(
    REFERENCE,
    (whole, braced?: string, operator?: string, argument = '', bare?: string) => {
      if (whole === '$$') return '$';
      const name = (braced ?? bare)!;
      const value = env.get(name);
      const unset = value === undefined || (operator?.startsWith(':') === true && value === '');
      switch (operator?.replace(':', '')) {
        case '-':
          return unset ? argument : value!;
        case '?':
          if (unset) throw new InterpolationError(`required variable ${name} is missing: ${argument}`);
          return value!;
        case '+':
          return unset ? '' : argument;
        default:
          return value ?? '';
      }
    },
  );
}

/** Every string in a parsed YAML value, depth first. */
export function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

/** The whole file interpolated, as `docker compose config` would see it with this env. */
export function interpolateAll<T>(value: T, env: ReadonlyMap<string, string>): T {
  if (typeof value === 'string') return interpolate(value, env) as T;
  if (Array.isArray(value)) return value.map((item) => interpolateAll(item, env)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateAll(item, env)]),
    ) as T;
  }
  return value;
}
