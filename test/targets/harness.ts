// Events as each provider normalises them, for the target suites: the replyTo shapes the inbound
// providers produce (Slack thread, LINE reply token and user, GitHub issue) and Stripe refunds; and a
// LINE answer with a quick reply and a flex message.
import type { webhook } from '@line/bot-sdk';
import type { InboundEvent } from '../../src/providers/types';
import { signLineRequest } from '../support/signers';
import { uniqueId } from '../support/system';

function chatEvent(
  provider: string,
  conversationId: string,
  messageId: string,
  replyTo: InboundEvent['replyTo'],
  payload: unknown = {},
): InboundEvent {
  const eventId = uniqueId('Ev');
  const now = new Date().toISOString();
  return {
    provider,
    eventId,
    workflowId: `webhook:${provider}:${eventId}`,
    eventType: 'message',
    occurredAt: now,
    receivedAt: now,
    correlationId: uniqueId('corr-'),
    conversation: { id: conversationId, version: now },
    message: { id: messageId, text: 'what are your opening hours?' },
    replyTo,
    payload,
  };
}

/**
 * A Slack mention of the bot (the default route answers only what addresses it): the reply goes to
 * its thread, or (`topLevel`) to the channel itself.
 */
export function slackEvent(channel: string, ts: string, topLevel = false): InboundEvent {
  const mention = {
    type: 'app_mention',
    channel,
    user: 'U1',
    text: '<@UBOT> opening hours?',
    ts,
    event_ts: ts,
  };
  return {
    ...chatEvent(
      'slack',
      `T1:${channel}:${ts}`,
      ts,
      { target: 'slack', kind: 'answer', destination: topLevel ? { channel } : { channel, threadTs: ts } },
      { type: 'event_callback', team_id: 'T1', event: mention },
    ),
    eventType: 'app_mention',
  };
}

/** A LINE user message; without a token (a push-only destination) the reply must be pushed. */
export function lineEvent(
  to: string,
  messageId: string,
  token?: { replyToken: string; replyTokenExpiresAt: string },
): InboundEvent {
  return chatEvent('line', `Ubot:${to}`, messageId, {
    target: 'line',
    kind: 'answer',
    destination: { to, ...token },
  });
}

/** A LINE answer: a text with a quick reply, and a flex bubble (what a bot with buttons sends). */
export const QUICK_REPLY_AND_FLEX: Record<string, unknown>[] = [
  {
    type: 'text',
    text: 'Which day suits you?',
    quickReply: {
      items: [
        { type: 'action', action: { type: 'message', label: 'Today', text: 'today' } },
        {
          type: 'action',
          action: { type: 'postback', label: 'Tomorrow', data: 'day=tomorrow', displayText: 'Tomorrow' },
        },
        {
          type: 'action',
          action: { type: 'datetimepicker', label: 'Pick', data: 'day=pick', mode: 'date' },
        },
      ],
    },
  },
  {
    type: 'flex',
    altText: 'Opening hours',
    contents: {
      type: 'bubble',
      body: { type: 'box', layout: 'vertical', contents: [{ type: 'text', text: '9:00-18:00' }] },
    },
  },
];

/**
 * A LINE postback webhook request as LINE signs it: a person pressed a button whose data is `data`;
 * `replyToken` comes from the fake LINE API.
 */
export function linePostbackRequest(
  channelSecret: string,
  to: string,
  replyToken: string,
  postback: webhook.PostbackContent,
): { body: string; headers: Record<string, string> } {
  const event: webhook.PostbackEvent = {
    type: 'postback',
    mode: 'active',
    timestamp: Date.now(),
    source: { type: 'user', userId: to },
    webhookEventId: uniqueId('01PB'),
    deliveryContext: { isRedelivery: false },
    replyToken,
    postback,
  };
  const body = JSON.stringify({ destination: 'Ubot', events: [event] });
  return { body, headers: signLineRequest(channelSecret, body) };
}

export function githubIssueOpened(owner: string, repo: string, issueNumber: string): InboundEvent {
  const event = chatEvent('github', `${owner}/${repo}#${issueNumber}`, `issue-${issueNumber}`, {
    target: 'github',
    kind: 'ack',
    destination: { owner, repo, issueNumber },
  });
  return { ...event, eventType: 'issues.opened' };
}

/** A Stripe `refund.created` event for a partial refund of an order. */
export function stripeRefund(options: {
  shop: string;
  order: string;
  refund: string;
  amount: number;
}): InboundEvent {
  const eventId = uniqueId('evt_');
  const now = new Date().toISOString();
  return {
    provider: 'stripe',
    eventId,
    workflowId: `webhook:stripe:${eventId}`,
    eventType: 'refund.created',
    occurredAt: now,
    receivedAt: now,
    correlationId: uniqueId('corr-'),
    payload: {
      id: eventId,
      type: 'refund.created',
      data: {
        object: {
          id: options.refund,
          object: 'refund',
          amount: options.amount,
          status: 'succeeded',
          metadata: { shop: options.shop, order: options.order },
        },
      },
    },
  };
}
