// Who may do what from the operator CLI: roles per operator, from a role file (JSON or YAML) or
// REPLYFLOW_ROLES. Without either, everyone may view and nobody may act (docs/cli.md says why).

import { readFileSync } from 'node:fs';
import YAML from 'yaml';
import { z } from 'zod';
import { errorMessage } from '../failures';

/** One role per kind of decision, so that asking for a resend and approving it stay with different people. */
export const ROLES = [
  'view',
  'resend',
  'mark-sent',
  'discard',
  'approve',
  'reprocess',
  'conversation',
  'purge',
] as const;

export type Role = (typeof ROLES)[number];

export interface RoleTable {
  /** Roles of each named operator; every role includes `view`. */
  operators: ReadonlyMap<string, ReadonlySet<Role>>;
  /** Roles of operators the table does not name. */
  others: ReadonlySet<Role>;
  /** Where the table came from, for messages: the file, `REPLYFLOW_ROLES`, or the built-in default. */
  source: string;
}

/** Thrown when the role file or REPLYFLOW_ROLES cannot be used; lists every problem at once. */
export class RoleConfigError extends Error {
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(`Invalid operator roles in ${source}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'RoleConfigError';
  }
}

/** Without a role table nobody is trusted to change anything: viewing is harmless, acting is not. */
export const DEFAULT_ROLES: RoleTable = {
  operators: new Map(),
  others: new Set<Role>(['view']),
  source: 'the default roles (no REPLYFLOW_ROLES_FILE or REPLYFLOW_ROLES): everyone may view, nobody may act',
};

const roleList = z.array(z.string());
const roleFileSchema = z.strictObject({
  operators: z.record(z.string().min(1).max(100), roleList),
  /** Roles of operators not listed; omitted: none. */
  default: roleList.optional(),
});

export interface RoleSources {
  REPLYFLOW_ROLES_FILE?: string;
  REPLYFLOW_ROLES?: string;
}

export function loadRoles(sources: RoleSources): RoleTable {
  if (sources.REPLYFLOW_ROLES_FILE && sources.REPLYFLOW_ROLES) {
    throw new RoleConfigError('the environment', [
      'REPLYFLOW_ROLES_FILE and REPLYFLOW_ROLES are both set: keep one, so that one place says who may act',
    ]);
  }
  if (sources.REPLYFLOW_ROLES_FILE) return loadRoleFile(sources.REPLYFLOW_ROLES_FILE);
  if (sources.REPLYFLOW_ROLES) return parseInlineRoles(sources.REPLYFLOW_ROLES);
  return DEFAULT_ROLES;
}

/**
 * A role file: `{ operators: { alice: [mark-sent, resend], bob: [approve] }, default: [view] }`,
 * JSON or YAML. `"*"` grants every role.
 */
export function loadRoleFile(file: string): RoleTable {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new RoleConfigError(file, [`cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  let raw: unknown;
  try {
    raw = YAML.parse(text);
  } catch (err) {
    throw new RoleConfigError(file, [`not valid JSON or YAML: ${errorMessage(err).split('\n')[0]}`]);
  }
  const parsed = roleFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new RoleConfigError(
      file,
      parsed.error.issues.map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`),
    );
  }
  const entries = Object.entries(parsed.data.operators);
  return build(file, entries, parsed.data.default ?? []);
}

/** `alice=mark-sent+resend,bob=approve,*=view`: `*` stands for every operator not named. */
export function parseInlineRoles(value: string): RoleTable {
  const entries: [string, string[]][] = [];
  let others: string[] = [];
  const problems: string[] = [];
  for (const part of value.split(',')) {
    const at = part.indexOf('=');
    const operator = part.slice(0, Math.max(at, 0)).trim();
    const roles = part
      .slice(at + 1)
      .split('+')
      .map((r) => r.trim())
      .filter(Boolean);
    if (at < 1 || !operator || roles.length === 0) {
      problems.push(`"${part.trim()}": expected operator=role+role (e.g. alice=mark-sent+resend)`);
    } else if (operator === '*') {
      others = roles;
    } else {
      entries.push([operator, roles]);
    }
  }
  if (problems.length > 0) throw new RoleConfigError('REPLYFLOW_ROLES', problems);
  return build('REPLYFLOW_ROLES', entries, others);
}

function build(source: string, entries: [string, string[]][], others: string[]): RoleTable {
  const problems: string[] = [];
  const toSet = (who: string, names: string[]): Set<Role> => {
    if (names.includes('*')) return new Set(ROLES);
    const unknown = names.filter((n) => !(ROLES as readonly string[]).includes(n));
    if (unknown.length > 0)
      problems.push(`${who}: unknown role ${unknown.join(', ')} (known: ${ROLES.join(', ')}, or *)`);
    const roles = new Set(names.filter((n): n is Role => (ROLES as readonly string[]).includes(n)));
    // Whoever may decide must be able to see what they decide on.
    if (roles.size > 0) roles.add('view');
    return roles;
  };
  const operators = new Map(entries.map(([who, names]) => [who, toSet(who, names)]));
  const table = { operators, others: toSet('default', others), source };
  if (problems.length > 0) throw new RoleConfigError(source, problems);
  return table;
}

export function rolesOf(table: RoleTable, operator: string | undefined): ReadonlySet<Role> {
  return (operator !== undefined && table.operators.get(operator)) || table.others;
}

export function permits(table: RoleTable, operator: string | undefined, role: Role): boolean {
  return rolesOf(table, operator).has(role);
}
