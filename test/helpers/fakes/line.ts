// A fake of the LINE Messaging API (https://developers.line.biz/en/reference/messaging-api/): reply
// (single-use, expiring reply tokens; 400 "Invalid reply token"; the retry key refused with 400) and
// push (X-Line-Retry-Key: 409 with x-line-accepted-request-id once a key was accepted).
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { type Answer, FakeApi, type Recorded, send } from './base';

export interface LineDelivery {
  to: string;
  via: 'reply' | 'push';
  text: string;
  messageId: string;
  retryKey?: string;
}

export class FakeLine extends FakeApi {
  readonly deliveries: LineDelivery[] = [];
  private readonly tokens = new Map<string, { to: string; expiresAt: number; used: boolean }>();
  private readonly acceptedKeys = new Map<string, { requestId: string; messageId: string }>();
  private seq = 0;

  constructor(readonly channelAccessToken = 'line-test-token') {
    super();
  }

  /** A reply token as a webhook event would carry it. */
  replyToken(to: string, validForMs = 60_000): { replyToken: string; replyTokenExpiresAt: string } {
    const replyToken = randomUUID().replace(/-/g, '');
    const expiresAt = Date.now() + validForMs;
    this.tokens.set(replyToken, { to, expiresAt, used: false });
    return { replyToken, replyTokenExpiresAt: new Date(expiresAt).toISOString() };
  }

  /** Uses a token up, as if someone else had replied with it. */
  spend(replyToken: string): void {
    this.tokens.get(replyToken)!.used = true;
  }

  deliveredTo(to: string): LineDelivery[] {
    return this.deliveries.filter((d) => d.to === to);
  }

  replies(): Recorded[] {
    return this.to('/v2/bot/message/reply');
  }

  pushes(): Recorded[] {
    return this.to('/v2/bot/message/push');
  }

  protected errorBody(status: number): unknown {
    return { message: status === 429 ? 'Too many requests' : 'An error occurred in the backend' };
  }

  protected handle(request: Recorded, res: http.ServerResponse) {
    if (request.headers.authorization !== `Bearer ${this.channelAccessToken}`)
      return send(res, {
        status: 401,
        body: {
          message:
            'Authentication failed. Confirm that the access token in the authorization header is valid.',
        },
      });
    const retryKey = request.headers['x-line-retry-key'] as string | undefined;
    if (request.path === '/v2/bot/message/reply') {
      // Only push, multicast, narrowcast and broadcast accept a retry key.
      if (retryKey) return send(res, { status: 400, body: { message: 'The retry key is not supported' } });
      const token = this.tokens.get(String(request.body.replyToken));
      if (!token || token.used || token.expiresAt <= Date.now())
        return send(res, { status: 400, body: { message: 'Invalid reply token' } });
      return this.write(res, () => {
        token.used = true;
        return this.deliver(token.to, 'reply', request.body);
      });
    }
    if (request.path === '/v2/bot/message/push') {
      const accepted = retryKey ? this.acceptedKeys.get(retryKey) : undefined;
      if (accepted)
        return send(res, {
          status: 409,
          body: {
            message: 'The retry key is already accepted',
            sentMessages: [{ id: accepted.messageId, quoteToken: 'q' }],
          },
          headers: { 'x-line-accepted-request-id': accepted.requestId },
        });
      return this.write(res, () => {
        const answer = this.deliver(String(request.body.to), 'push', request.body, retryKey);
        if (retryKey)
          this.acceptedKeys.set(retryKey, {
            requestId: answer.headers!['x-line-request-id']!,
            messageId: this.lastMessageId(),
          });
        return answer;
      });
    }
    send(res, { status: 404, body: { message: 'Not found' } });
  }

  private lastMessageId(): string {
    return this.deliveries.at(-1)!.messageId;
  }

  private deliver(
    to: string,
    via: LineDelivery['via'],
    body: Record<string, unknown>,
    retryKey?: string,
  ): Answer {
    this.seq += 1;
    const messageId = String(500000 + this.seq);
    const text = ((body.messages as { text?: string }[] | undefined)?.[0]?.text ?? '') as string;
    this.deliveries.push({ to, via, text, messageId, retryKey });
    return {
      status: 200,
      body: { sentMessages: [{ id: messageId, quoteToken: 'q' }] },
      headers: { 'x-line-request-id': randomUUID() },
    };
  }
}
