// The example bot type-checks against the published contract (`import type … from 'replyflow'`, the
// package's own exports), and a bot that answers something else is a type error, not a surprise at
// run time: the TypeScript compiler on the real file and on variants of it held in memory.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');
const EXAMPLE = path.join(ROOT, 'examples', 'bot', 'bot.ts');

/**
 * The compiler's errors per file for `files` (path → source; everything else from disk), with the
 * project's options: one program for all of them, as a check of many files costs about one.
 */
function typeErrors(files: Record<string, string>): Map<string, string[]> {
  const configFile = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, ROOT);
  // A bot needs Node's types, not the test runner's.
  const options = { ...parsed.options, types: ['node'] };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => f in files || fileExists.call(host, f);
  host.readFile = (f) => files[f] ?? readFile.call(host, f);
  host.getSourceFile = (f, language, ...rest) =>
    f in files ? ts.createSourceFile(f, files[f]!, language) : getSourceFile.call(host, f, language, ...rest);
  const program = ts.createProgram({ rootNames: Object.keys(files), options, host });
  const errors = new Map(Object.keys(files).map((f) => [f, [] as string[]]));
  for (const d of ts.getPreEmitDiagnostics(program))
    errors.get(d.file?.fileName ?? '')?.push(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  return errors;
}

const VARIANTS = [
  [
    'returns a text that is not a string',
    'return { text: 42 };',
    /Type 'number' is not assignable to type 'string'/,
  ],
  ['returns a bare string', "return 'hello';", /not assignable to type 'BotReply'/],
  ['returns blocks that are not a list', "return { text: 'x', blocks: 'oops' };", /not assignable/],
  [
    'reads a field the event does not have',
    'return { text: event.channel };',
    /Property 'channel' does not exist on type 'BotEvent'/,
  ],
] as const;

/** A bot like the example, answering `body`, as a file beside it (so that 'replyflow' resolves the same). */
const variantFile = (i: number) => path.join(ROOT, 'examples', 'bot', `variant-${i}.ts`);
const variantSource = (body: string) => `import type { BotEvent, BotReply } from 'replyflow';
export async function respond(event: BotEvent): Promise<BotReply> {
  ${body}
}
`;

describe('the example bot and the contract types', function () {
  this.timeout(60_000);

  let errors: Map<string, string[]>;
  before(() => {
    errors = typeErrors({
      [EXAMPLE]: readFileSync(EXAMPLE, 'utf8'),
      ...Object.fromEntries(VARIANTS.map(([, body], i) => [variantFile(i), variantSource(body)])),
    });
  });

  it('type-checks against the types the package exports', () => {
    assert.deepEqual(errors.get(EXAMPLE), []);
  });

  VARIANTS.forEach(([name, , expected], i) => {
    it(`refuses a bot that ${name}`, () => {
      const found = errors.get(variantFile(i))!;
      assert.ok(
        found.some((e) => expected.test(e)),
        found.join('\n') || 'no error at all',
      );
    });
  });
});
