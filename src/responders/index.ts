// Picks the responder a deployment configured: an HTTP service when RESPONDER_URL is set, else the FAQ.
import type { Config } from '../config';
import { faqResponder, loadFaqFile } from './faq';
import { httpResponder } from './http';
import type { Responder } from './types';

export function createResponder(config: Config): Responder {
  if (config.RESPONDER_URL) {
    return httpResponder({
      url: config.RESPONDER_URL,
      timeoutMs: config.RESPONDER_TIMEOUT,
      token: config.RESPONDER_TOKEN,
    });
  }
  return faqResponder(config.RESPONDER_FAQ_FILE ? loadFaqFile(config.RESPONDER_FAQ_FILE) : undefined);
}
