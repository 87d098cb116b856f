// Picks the bot's logic a deployment configured: a module (RESPONDER_MODULE), a service
// (RESPONDER_URL), else the FAQ. Only one: two would leave it unclear who answers.
import type { Config } from '../config';
import { ConfigError } from '../errors';
import { faqResponder, loadFaqFile } from './faq';
import { httpResponder } from './http';
import { moduleResponder } from './module';
import type { Responder } from './types';

/** @throws ConfigError naming the setting, when the configured responder cannot be used. */
export async function createResponder(config: Config): Promise<Responder> {
  if (config.RESPONDER_MODULE && config.RESPONDER_URL)
    throw new ConfigError(['set RESPONDER_MODULE or RESPONDER_URL, not both']);
  if (config.RESPONDER_MODULE) return moduleResponder(config.RESPONDER_MODULE);
  if (config.RESPONDER_URL) {
    return httpResponder({
      url: config.RESPONDER_URL,
      timeoutMs: config.RESPONDER_TIMEOUT,
      token: config.RESPONDER_TOKEN,
    });
  }
  return faqResponder(config.RESPONDER_FAQ_FILE ? loadFaqFile(config.RESPONDER_FAQ_FILE) : undefined);
}
