// The Web UI guard's rule, request by request: a request the UI itself makes passes; each test breaks
// one thing a hostile page would (test/browser/hostile-page.test.ts plays the pages in Chromium).
// And the codec settings it completes, through a real guard in front of a stand-in UI server.
import assert from 'node:assert/strict';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../../src/ports';
import {
  CODEC_BANNER,
  codecSettings,
  refusal,
  SETTINGS_PATH,
  startWebUiGuard,
  type WebUiGuard,
} from '../../src/temporal/web-ui-guard';

const PORT = 8233;

/** A POST the UI's own page makes to its API: same origin, its Host, its Origin. */
function fromTheUi(change: IncomingHttpHeaders = {}, method = 'POST') {
  const headers: IncomingHttpHeaders = {
    host: `127.0.0.1:${PORT}`,
    origin: `http://127.0.0.1:${PORT}`,
    'sec-fetch-site': 'same-origin',
    'sec-fetch-mode': 'cors',
    'sec-fetch-dest': 'empty',
    ...change,
  };
  for (const [name, value] of Object.entries(headers)) if (value === undefined) delete headers[name];
  return { method, headers };
}

/** An operator opening a page of the UI from a link elsewhere (an alert, the sandbox page). */
const opensPage = {
  'sec-fetch-site': 'cross-site',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-dest': 'document',
};

describe('Web UI guard: which requests reach the embedded Temporal Web UI (src/temporal/web-ui-guard.ts)', () => {
  it('passes the UI’s own requests, on 127.0.0.1 and on localhost', () => {
    assert.equal(refusal(fromTheUi(), PORT), undefined);
    const localhost = { host: `localhost:${PORT}`, origin: `http://localhost:${PORT}` };
    assert.equal(refusal(fromTheUi(localhost), PORT), undefined);
    assert.equal(refusal(fromTheUi({ origin: undefined }, 'GET'), PORT), undefined);
  });

  it('passes a client that is no browser (no Origin, no Sec-Fetch-*) on the UI’s Host', () => {
    assert.equal(refusal({ method: 'GET', headers: { host: `127.0.0.1:${PORT}` } }, PORT), undefined);
  });

  it('passes a top-level navigation from another site: an operator following a link', () => {
    assert.equal(refusal(fromTheUi({ ...opensPage, origin: undefined }, 'GET'), PORT), undefined);
  });

  it('refuses any other Host: a rebound host name, another port, none', () => {
    for (const host of ['rebound.test:8233', '127.0.0.1:9999', '127.0.0.2:8233', '[::1]:8233', undefined])
      assert.match(
        refusal(fromTheUi({ host, origin: `http://${host}` }), PORT) ?? '',
        /answers only at/,
        host,
      );
  });

  it('refuses another origin, an opaque one ("null") included', () => {
    for (const origin of ['http://127.0.0.1:3000', 'http://localhost:8233', 'null'])
      assert.match(refusal(fromTheUi({ origin }), PORT) ?? '', /other origins/, origin);
  });

  it('refuses what another page makes without an Origin: a no-cors GET, a frame, a form post', () => {
    const noCors = { origin: undefined, 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'no-cors' };
    assert.match(refusal(fromTheUi(noCors, 'GET'), PORT) ?? '', /other origins/);
    const frame = { ...opensPage, origin: undefined, 'sec-fetch-dest': 'iframe' };
    assert.match(refusal(fromTheUi(frame, 'GET'), PORT) ?? '', /other origins/);
    assert.match(
      refusal(fromTheUi({ ...opensPage, origin: undefined }, 'POST'), PORT) ?? '',
      /other origins/,
    );
  });

  it('expects no port in the Host on port 80, as browsers send it', () => {
    const headers = { host: '127.0.0.1', origin: 'http://127.0.0.1' };
    assert.equal(refusal({ method: 'POST', headers }, 80), undefined);
  });
});

describe('Web UI guard: the UI’s codec settings (src/temporal/web-ui-guard.ts codecSettings)', () => {
  const LOGIN = 'http://127.0.0.1:3000/codec/login';
  /** What the UI server of `temporal server start-dev --ui-codec-endpoint` answers, in part. */
  const settings = (codec: object | null) =>
    JSON.stringify({ DefaultNamespace: 'default', Codec: codec, Version: '2.54.1' });
  let upstream: http.Server;
  let guard: WebUiGuard | undefined;
  let requests: IncomingHttpHeaders[];
  let answer: string;

  before(async () => {
    upstream = http.createServer((req, res) => {
      requests.push(req.headers);
      const body = req.url === SETTINGS_PATH ? answer : 'page';
      res.writeHead(200, { 'content-type': 'application/json', etag: '"1"' }).end(body);
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  });
  beforeEach(() => {
    requests = [];
    answer = settings({ Endpoint: 'http://127.0.0.1:3000/codec', IncludeCredentials: false });
  });
  afterEach(async () => {
    await guard?.close();
    guard = undefined;
  });
  after(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

  async function through(codecLogin: string | undefined, path = SETTINGS_PATH) {
    guard = await startWebUiGuard({
      port: await freePort(),
      upstreamPort: (upstream.address() as AddressInfo).port,
      ...(codecLogin ? { codecLogin } : {}),
    });
    const response = await fetch(`${guard.url}${path}`, {
      headers: { 'accept-encoding': 'gzip', 'if-none-match': '"1"' },
    });
    return { response, body: await response.text() };
  }

  it('sends the login cookie to the cluster-level endpoint and names the login page in the banner', async () => {
    const { response, body } = await through(LOGIN);
    assert.equal(response.status, 200);
    assert.deepEqual(JSON.parse(body).Codec, {
      Endpoint: 'http://127.0.0.1:3000/codec',
      IncludeCredentials: true,
      DefaultErrorMessage: CODEC_BANNER,
      DefaultErrorLink: LOGIN,
    });
    assert.equal(JSON.parse(body).Version, '2.54.1', 'the rest as the UI server said');
    assert.equal(requests[0]?.['accept-encoding'], undefined, 'asked uncompressed, to be read');
    assert.equal(requests[0]?.['if-none-match'], undefined, 'asked whole: no 304 of what a browser cached');
    assert.equal(response.headers.get('etag'), null, 'no validator of the unchanged answer');
    assert.equal(response.headers.get('cache-control'), 'no-store');
  });

  it('passes everything else as it is: other paths, a UI without a codec login, one without an endpoint', async () => {
    assert.equal((await through(LOGIN, '/namespaces/default/workflows')).body, 'page');
    assert.equal(requests[0]?.['accept-encoding'], 'gzip');
    await guard?.close();
    assert.equal((await through(undefined)).body, answer);
    await guard?.close();
    answer = settings(null);
    assert.equal((await through(LOGIN)).body, answer);
    assert.equal(codecSettings('{"Codec":{"Endpoint":""}}', LOGIN), '{"Codec":{"Endpoint":""}}');
  });

  it('passes an answer that is not JSON unchanged', async () => {
    answer = 'not json';
    assert.equal((await through(LOGIN)).body, 'not json');
  });
});
