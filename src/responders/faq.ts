// The FAQ responder: a validated file of patterns → answers, and a fallback that tells the person a
// human will follow up. Matching is case-insensitive on whole words (substrings for scripts written
// without spaces, such as Japanese); the first match wins.

import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { errorMessage } from '../failures';
import type { Responder } from './types';

const faqFileSchema = z.object({
  entries: z
    .array(
      z.object({
        patterns: z.array(z.string().min(1)).min(1),
        answer: z.string().min(1).max(4000),
      }),
    )
    .min(1),
  fallback: z.string().min(1).max(4000),
});

type FaqFile = z.infer<typeof faqFileSchema>;

export const DEFAULT_FAQ: FaqFile = {
  entries: [
    {
      patterns: ['opening hours', 'open', '営業時間'],
      answer: 'We are open 9:00-18:00 JST, Monday to Friday.',
    },
    { patterns: ['refund', '返金'], answer: 'Refunds are processed within 5 business days of approval.' },
    { patterns: ['hello', 'hi', 'こんにちは'], answer: 'Hello! Ask me about opening hours or refunds.' },
  ],
  fallback: 'Thanks for your message. A person from our team will follow up shortly.',
};

/** Reads and validates an FAQ file; every problem is listed with its path. */
export function loadFaqFile(file: string): FaqFile {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`FAQ file ${file} is not readable JSON: ${errorMessage(err)}`);
  }
  const parsed = faqFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new Error(
      `FAQ file ${file} is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  return parsed.data;
}

export function faqResponder(faq: FaqFile = DEFAULT_FAQ): Responder {
  const entries = faq.entries.map((e) => ({
    answer: e.answer,
    patterns: e.patterns.map((p) =>
      /^[\x20-\x7e]+$/.test(p)
        ? new RegExp(`\\b${escapeRegExp(p)}\\b`, 'i')
        : new RegExp(escapeRegExp(p), 'iu'),
    ),
  }));
  return {
    local: true,
    async answer(event) {
      const text = event.message?.text ?? '';
      return { text: entries.find((e) => e.patterns.some((p) => p.test(text)))?.answer ?? faq.fallback };
    },
  };
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
