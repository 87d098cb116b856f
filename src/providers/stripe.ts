// Stripe webhooks (`/webhooks/stripe`): the Stripe-Signature check with the `stripe` package, and
// events keyed by their `evt_` id. Stripe events get no default reply: effects come from routes only.
import { z } from 'zod';
import { stripeSdk } from '../provider-sdks';
import { WebhookVerificationError } from './errors';
import { epochSeconds, epochToIso, parseJson, validate } from './parse';
import { header, type ProviderResult, type RequestContext, type WebhookProvider } from './types';

/** Stripe's own default: a signature older than five minutes is a replay. */
const STRIPE_TOLERANCE_SECONDS = 300;

/**
 * Verifies `Stripe-Signature` with the `stripe` package: any `v1` that matches passes (so a rolled
 * secret's old and new signatures both work), `v0` is ignored, the compare is constant-time, and a
 * timestamp older than 300 s is rejected. This is the check `webhooks.constructEvent` runs before it
 * parses; the parsing is left to parse() so that a signed but malformed body is a 400 with zod issues,
 * not a library exception.
 *
 * Stripe's libraries check only the age, so a request signed for a time ahead stays replayable until
 * then plus 300 s; we also refuse a signed timestamp more than 300 s ahead of the arrival time (as
 * Standard Webhooks does), which a sender whose clock is right never sends.
 */
export function verifyStripeRequest(secret: string, ctx: RequestContext): void {
  const signature = header(ctx.headers, 'stripe-signature');
  if (!signature) throw new WebhookVerificationError('missing Stripe-Signature header');
  const Stripe = stripeSdk();
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
  // Written so that a t= that is no number (NaN, which the library's age check lets through) is refused.
  const aheadSeconds = signedSeconds(signature) - ctx.receivedAt.getTime() / 1000;
  if (!(aheadSeconds <= STRIPE_TOLERANCE_SECONDS)) {
    throw new WebhookVerificationError(
      `Stripe-Signature timestamp is more than ${STRIPE_TOLERANCE_SECONDS} s in the future; check the sender's clock`,
    );
  }
}

/**
 * The timestamp the signature covers, read as the `stripe` package reads it (the last `t=` item,
 * parseInt), so that no other `t=` in the header can stand in for it. Only called once it verified.
 */
function signedSeconds(signature: string): number {
  let seconds = Number.NaN;
  for (const item of signature.split(',')) {
    const [key, value] = item.split('=');
    if (key === 't') seconds = Number.parseInt(value ?? '', 10);
  }
  return seconds;
}

function shortReason(libraryMessage: string): string {
  if (/tolerance/i.test(libraryMessage)) {
    return `Stripe-Signature timestamp is older than ${STRIPE_TOLERANCE_SECONDS} s`;
  }
  if (/extract|expected scheme/i.test(libraryMessage)) {
    return 'Stripe-Signature is malformed: expected t=<seconds>,v1=<hex>';
  }
  return 'Stripe-Signature does not match the raw body; check STRIPE_WEBHOOK_SECRET (the endpoint secret, whsec_…)';
}

/**
 * Both payload styles Stripe sends: a snapshot event (`created` in seconds, the object in `data`) and
 * a thin event from an event destination (`object: "v2.core.event"`, `created` as ISO 8601, the
 * object named in `related_object`), as the `stripe` package types them (Stripe.Event,
 * Stripe.V2.Core.Event).
 */
const stripeEvent = z.looseObject({
  id: z
    .string()
    .regex(/^evt_[\w-]{1,200}$/, 'must be a Stripe event id: evt_ followed by letters, digits, - or _'),
  type: z.string().min(1),
  created: z.union([epochSeconds, z.iso.datetime({ offset: true })]),
  data: z.looseObject({ object: z.looseObject({}) }).optional(),
  related_object: z.looseObject({}).optional(),
});

/** The object an event is about, when it names one: the conversation (e.g. `payment_intent:pi_…`). */
const snapshotObject = z.object({ object: z.string().min(1), id: z.string().min(1) });
const relatedObject = z.object({ type: z.string().min(1), id: z.string().min(1) });

function subjectOf(body: z.infer<typeof stripeEvent>): string | undefined {
  const snapshot = snapshotObject.safeParse(body.data?.object);
  if (snapshot.success) return `${snapshot.data.object}:${snapshot.data.id}`;
  const related = relatedObject.safeParse(body.related_object);
  return related.success ? `${related.data.type}:${related.data.id}` : undefined;
}

export function stripeProvider(secret: string): WebhookProvider<ProviderResult> {
  return {
    name: 'stripe',
    contentTypes: ['application/json'],
    verify(ctx) {
      verifyStripeRequest(secret, ctx);
    },
    parse(ctx): ProviderResult {
      const body = validate(stripeEvent, parseJson(ctx.rawBody));
      const occurredAt =
        typeof body.created === 'number'
          ? epochToIso(body.created, 's')
          : new Date(body.created).toISOString();
      const subject = subjectOf(body);
      return {
        kind: 'events',
        events: [
          {
            provider: 'stripe',
            eventId: body.id,
            workflowId: `webhook:stripe:${body.id}`,
            eventType: body.type,
            occurredAt,
            receivedAt: ctx.receivedAt.toISOString(),
            correlationId: ctx.correlationId,
            ...(subject ? { conversation: { id: subject, version: String(body.created) } } : {}),
            payload: body,
          },
        ],
      };
    },
  };
}
