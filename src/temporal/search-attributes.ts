// Whether a namespace has every search attribute replyflow sets (workflows/search-attributes.ts), with
// the right types. Without them every workflow start fails ("Failed to start Workflow"), so the
// receiver's /readyz and the worker's start check first and name the command that fixes it.
import type { OperatorService } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';

const { IndexedValueType } = temporal.api.enums.v1;

/** The type names `temporal operator search-attribute create --type` takes. */
const CLI_TYPE: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

export interface SearchAttributeProblem {
  name: string;
  /** The type replyflow sets it as (CLI spelling). */
  type: string;
  /** The type the namespace has it as, when it has it under another type. */
  registeredAs?: string;
}

/** Every search attribute the namespace lacks or has with another type (empty: all there). */
export async function searchAttributeProblems(
  operatorService: OperatorService,
  namespace: string,
): Promise<SearchAttributeProblem[]> {
  const { customAttributes } = await operatorService.listSearchAttributes({ namespace });
  const registered = new Map(Object.entries(customAttributes ?? {}));
  const problems: SearchAttributeProblem[] = [];
  for (const key of ALL_SEARCH_ATTRIBUTES) {
    const have = registered.get(key.name);
    if (have === IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}`]) continue;
    problems.push({
      name: key.name,
      type: CLI_TYPE[key.type],
      ...(have !== undefined ? { registeredAs: cliTypeOf(have) } : {}),
    });
  }
  return problems;
}

/** The CLI's name for a type the server reports (its enum name when we have no CLI name for it). */
function cliTypeOf(value: temporal.api.enums.v1.IndexedValueType): string {
  const name = String(IndexedValueType[value] ?? value).replace(/^INDEXED_VALUE_TYPE_/, '');
  return CLI_TYPE[name as SearchAttributeType] ?? name;
}

/** One sentence naming what is missing or mistyped and the exact command that creates what is missing. */
export function searchAttributeAdvice(
  problems: SearchAttributeProblem[],
  target: { address: string; namespace: string },
): string {
  const missing = problems.filter((p) => p.registeredAs === undefined);
  const mistyped = problems.filter((p) => p.registeredAs !== undefined);
  const parts: string[] = [];
  if (missing.length > 0) {
    const flags = missing.map((p) => `--name ${p.name} --type ${p.type}`).join(' ');
    parts.push(
      `namespace ${target.namespace} lacks the search attributes ${missing.map((p) => p.name).join(', ')}; ` +
        `run: temporal operator search-attribute create --address ${target.address} --namespace ${target.namespace} ${flags}`,
    );
  }
  if (mistyped.length > 0) {
    parts.push(
      `namespace ${target.namespace} has ${mistyped.map((p) => `${p.name} as ${p.registeredAs} (needs ${p.type})`).join(', ')}; ` +
        'remove them (temporal operator search-attribute remove) and create them with the right type',
    );
  }
  return parts.join('. ');
}
