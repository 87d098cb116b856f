// The event types each provider sends, as the conformance corpora declare them: the unions of the
// SDK types the conformance tests build their deliveries from (stripe, @slack/types and, for Slack's
// commands and interactivity, @slack/bolt; @line/bot-sdk)
// and, for GitHub, every event and action of @octokit/webhooks-types, the schema that
// @octokit/webhooks-examples is written against. scripts/generate-event-types.ts writes them into
// src/providers/sdk-event-types.ts; test/conformance/event-types.test.ts fails when the two differ.
import ts from 'typescript';
import { ANY_SUFFIX as ANY } from '../../src/providers/event-types';
import { TypeExamples } from './type-examples';

/** Named as the receiver names an event's type (src/providers/*.ts: `eventType`). */
const DECLARATIONS = `
import type Stripe from 'stripe';
import type { SlackEvent } from '@slack/types';
import type { SlackAction, SlackShortcut, SlackViewAction } from '@slack/bolt';
import type { webhook } from '@line/bot-sdk';
import type { WebhookEventMap } from '@octokit/webhooks-types';
export type stripe = Stripe.Event['type'] | Stripe.V2.Core.EventNotification['type'];
// A slash command's form has no type field: the receiver names it slash_command.
export type slack =
  | SlackEvent['type']
  | 'slash_command'
  | SlackAction['type']
  | SlackShortcut['type']
  | SlackViewAction['type'];
export type line = webhook.Event['type'];
type GitHubEventType<K extends keyof WebhookEventMap> = WebhookEventMap[K] extends infer E
  ? E extends { action: infer A extends string } ? \`\${K}.\${A}\` : K
  : never;
export type github = { [K in keyof WebhookEventMap]: GitHubEventType<K> }[keyof WebhookEventMap];
`;

type SdkProvider = 'github' | 'line' | 'slack' | 'stripe';

/**
 * What the SDK types list beside the events but never becomes an event of ours, so no route can wait
 * for it: Slack's `app_rate_limited` is an envelope of its own (acknowledged and ignored), never
 * inside event_callback; Slack's legacy interactions (attachments' `interactive_message`, dialogs'
 * `dialog_submission`, the retired `workflow_step_edit`) carry nothing the receiver keys on and are
 * acknowledged and ignored (src/providers/slack-interactions.ts); GitHub's `ping` is answered `pong`
 * at once and starts nothing.
 */
const NOT_EVENTS: Record<SdkProvider, readonly string[]> = {
  github: ['ping'],
  line: [],
  slack: ['app_rate_limited', 'dialog_submission', 'interactive_message', 'workflow_step_edit'],
  stripe: [],
};

/** Every event type per provider, sorted. Throws when a declared type is not one literal name. */
export function declaredEventTypes(): Record<SdkProvider, string[]> {
  const types = new TypeExamples(DECLARATIONS);
  const names = (provider: SdkProvider) => {
    const literals = types.variants(provider).map((t: ts.Type) => {
      if (t.isStringLiteral()) return t.value;
      // GitHub's repository_dispatch carries the sender's own event_type as its action: any action.
      const open = t.flags & ts.TypeFlags.TemplateLiteral ? (t as ts.TemplateLiteralType) : undefined;
      if (open?.texts.length === 2 && open.texts[1] === '' && open.types[0]!.flags & ts.TypeFlags.String)
        return `${open.texts[0]}${ANY}`;
      throw new Error(`${provider}: an event type is declared as neither a name nor a name with any suffix`);
    });
    return [...new Set(literals)].filter((name) => !NOT_EVENTS[provider].includes(name)).sort();
  };
  return { github: names('github'), line: names('line'), slack: names('slack'), stripe: names('stripe') };
}
