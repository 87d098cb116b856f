// A fake of Slack's response URLs (https://hooks.slack.com/commands/…, …/actions/…): each path is one
// response_url; a use answers `{ok:true}`, a sixth use `used_url`, a scripted status its error body.
import type http from 'node:http';
import { FakeApi, type Recorded } from './base';

/** Slack accepts up to five answers through one response_url. */
const USES = 5;

export class FakeResponseUrls extends FakeApi {
  /** A response_url of its own for one command or interaction. */
  urlFor(name: string): string {
    return `${this.url}/commands/T0/${encodeURIComponent(name)}/secret`;
  }

  /** The answers posted to `url` (accepted or not). */
  answersTo(url: string): Recorded[] {
    return this.to(new URL(url).pathname);
  }

  protected handle(request: Recorded, res: http.ServerResponse) {
    this.write(res, () => {
      const used = this.answersTo(`${this.url}${request.path}`).length;
      return used > USES
        ? { status: 200, body: { ok: false, error: 'used_url' } }
        : { status: 200, body: { ok: true } };
    });
  }

  protected errorBody(status: number): unknown {
    return { ok: false, error: status === 404 ? 'expired_url' : 'internal_error' };
  }
}
