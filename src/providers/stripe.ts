// Stripe webhooks (`/webhooks/stripe`): the Stripe-Signature check with the `stripe` package, and
// events keyed by their `evt_` id. Stripe events get no default reply: effects come from routes only.
import Stripe from 'stripe';
import { z } from 'zod';
import { epochToIso, parseJson, validate } from './parse';
import {
  header,
  type ProviderResult,
  type RequestContext,
  type WebhookProvider,
  WebhookVerificationError,
} from './types';

/** Stripe's own default: a signature older than five minutes is a replay. */
export const STRIPE_TOLERANCE_SECONDS = 300;

/**
 * Verifies `Stripe-Signature` with the `stripe` package: any `v1` that matches passes (so a rolled
 * secret's old and new signatures both work), `v0` is ignored, the compare is constant-time, and a
 * timestamp older than 300 s is rejected. Like Stripe's own libraries it accepts timestamps in the
 * future. This is the check `webhooks.constructEvent` runs before it parses; the parsing is left to
 * parse() so that a signed but malformed body is a 400 with zod issues, not a library exception.
 */
export function verifyStripeRequest(secret: string, ctx: RequestContext): void {
  const signature = header(ctx.headers, 'stripe-signature');
  if (!signature) throw new WebhookVerificationError('missing Stripe-Signature header');
  try {
    Stripe.webhooks.signature!.verifyHeader(
      ctx.rawBody,
      signature,
      secret,
      STRIPE_TOLERANCE_SECONDS,
      undefined,
      ctx.receivedAt.getTime(),
    );
  } catch (err) {
    if (!(err instanceof Stripe.errors.StripeSignatureVerificationError)) throw err;
    // The library's messages are long and carry advice for developers; the sender gets a short reason.
    throw new WebhookVerificationError(shortReason(err.message));
  }
}

function shortReason(libraryMessage: string): string {
  if (/tolerance/i.test(libraryMessage)) return 'Stripe-Signature timestamp is older than 300 s';
  if (/extract|expected scheme/i.test(libraryMessage)) {
    return 'Stripe-Signature is malformed: expected t=<seconds>,v1=<hex>';
  }
  return 'Stripe-Signature does not match the raw body; check STRIPE_WEBHOOK_SECRET (the endpoint secret, whsec_…)';
}

/** Signs a body the way Stripe does, with the `stripe` package's own test helper. */
export function signStripeEvent(secret: string, body: string, at = new Date()): Record<string, string> {
  return {
    'content-type': 'application/json; charset=utf-8',
    'stripe-signature': Stripe.webhooks.generateTestHeaderString({
      payload: body,
      secret,
      timestamp: Math.floor(at.getTime() / 1000),
    }),
  };
}

const stripeEvent = z.looseObject({
  id: z
    .string()
    .regex(/^evt_[\w-]{1,200}$/, 'must be a Stripe event id: evt_ followed by letters, digits, - or _'),
  type: z.string().min(1),
  created: z.number().int().nonnegative(),
  data: z.looseObject({ object: z.looseObject({}) }).optional(),
});

/** The object an event is about, when it names one: the conversation (e.g. `payment_intent:pi_…`). */
const dataObject = z.object({ object: z.string().min(1), id: z.string().min(1) });

export function stripeProvider(secret: string): WebhookProvider {
  return {
    name: 'stripe',
    contentTypes: ['application/json'],
    verify(ctx) {
      verifyStripeRequest(secret, ctx);
    },
    parse(ctx): ProviderResult {
      const body = validate(stripeEvent, parseJson(ctx.rawBody));
      const subject = dataObject.safeParse(body.data?.object);
      return {
        kind: 'events',
        events: [
          {
            provider: 'stripe',
            eventId: body.id,
            workflowId: `webhook:stripe:${body.id}`,
            eventType: body.type,
            occurredAt: epochToIso(body.created, 's'),
            receivedAt: ctx.receivedAt.toISOString(),
            correlationId: ctx.correlationId,
            ...(subject.success
              ? {
                  conversation: {
                    id: `${subject.data.object}:${subject.data.id}`,
                    version: String(body.created),
                  },
                }
              : {}),
            payload: body,
          },
        ],
      };
    },
  };
}
