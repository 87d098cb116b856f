// The bot's logic as a module (RESPONDER_MODULE): a `.ts`, `.js` or `.mjs` file exporting
// `respond(event)` (src/bot.ts), loaded once by the worker. replyflow runs under tsx's require hook
// (bin/replyflow.js), so a `.ts` file needs no build; a `.mjs` file is imported as ES module.
// It runs as an activity of its own (it may call other services): a throw is retried like a
// responder service's 5xx, then the reply is `failed` at prepareReply for a person to reprocess.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Respond } from '../bot';
import { ConfigError } from '../errors';
import { errorMessage } from '../failures';
import { toBotEvent } from './bot-event';
import type { Responder } from './types';

/** Loads the module and finds its `respond` (or a default export that is a function). @throws ConfigError */
export async function moduleResponder(file: string): Promise<Responder> {
  const full = path.resolve(file);
  const refuse = (why: string) => new ConfigError([`RESPONDER_MODULE ${file}: ${why}`]);
  if (!/\.(ts|mts|js|mjs|cjs)$/.test(full)) throw refuse('expected a .ts, .js or .mjs file');
  if (!existsSync(full)) throw refuse('no such file');
  let loaded: Record<string, unknown>;
  try {
    loaded = (full.endsWith('.mjs') ? await import(pathToFileURL(full).href) : require(full)) as Record<
      string,
      unknown
    >;
  } catch (err) {
    throw refuse(`cannot be loaded: ${errorMessage(err).split('\n')[0]}`);
  }
  const exported = loaded.respond ?? loaded.default;
  // A CommonJS module compiled from `export function respond` arrives as `default.respond`.
  const respond = (
    typeof exported === 'function' ? exported : (exported as { respond?: unknown } | undefined)?.respond
  ) as Respond | undefined;
  if (typeof respond !== 'function') throw refuse('exports no function `respond(event)`');
  return {
    answer: async (event) => respond(toBotEvent(event)),
  };
}
