// The Dockerfile checked without a Docker engine: its stages, its user, what it copies, and that the
// production install (`npm ci --omit=dev`) holds every package the code it copies imports at run time.
// hadolint lints the same file in CI (.ci/run).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/temporal/binaries';

interface Instruction {
  stage: string;
  keyword: string;
  args: string;
}

/** Dockerfile instructions (continuations joined, comments dropped), each with the stage it belongs to. */
function readDockerfile(): Instruction[] {
  const text = readFileSync(path.join(PROJECT_ROOT, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
  const instructions: Instruction[] = [];
  let stage = '';
  for (const line of text.split('\n')) {
    const match = /^([A-Z]+)\s+(.*)$/.exec(line.trim());
    if (!match) continue;
    const [, keyword, args] = match as unknown as [string, string, string];
    if (keyword === 'FROM') stage = /\sAS\s+(\S+)/i.exec(args)?.[1] ?? '';
    instructions.push({ stage, keyword, args });
  }
  return instructions;
}

/** The paths the runtime image copies from the build context. */
function copiedFromContext(instructions: Instruction[]): string[] {
  return instructions
    .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
    .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(PROJECT_ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => /\.(ts|js)$/.test(file))
    .map((file) => path.join(dir, file));
}

/** Packages a file needs at run time: value imports and requires (type-only imports are erased). */
function runtimePackages(file: string): string[] {
  const text = readFileSync(path.join(PROJECT_ROOT, file), 'utf8');
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)(?!\s+type\s)[^'"]*?from\s+'([^']+)'/gm),
    ...text.matchAll(/^\s*import\s+'([^']+)'/gm),
    ...text.matchAll(/\brequire\('([^']+)'\)/g),
  ].map((match) => match[1]!);
  return specifiers
    .filter((spec) => !spec.startsWith('.') && !spec.startsWith('node:'))
    .map((spec) =>
      spec
        .split('/')
        .slice(0, spec.startsWith('@') ? 2 : 1)
        .join('/'),
    );
}

describe('Dockerfile (static: no Docker engine here)', () => {
  const instructions = readDockerfile();
  const pkg = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };

  it('builds in stages and ends in the `runtime` stage docker-compose.yml targets', () => {
    const stages = instructions.filter((i) => i.keyword === 'FROM').map((i) => i.stage);
    assert.ok(stages.length >= 2, 'multi-stage');
    assert.equal(stages.at(-1), 'runtime');
  });

  it('installs production dependencies only, without fetching the Temporal binaries', () => {
    const install = instructions.find((i) => i.keyword === 'RUN' && i.args.includes('npm ci'));
    assert.ok(install, 'npm ci');
    assert.match(install.args, /npm ci --omit=dev/);
    const skip = instructions.find(
      (i) =>
        i.stage === install.stage &&
        i.keyword === 'ENV' &&
        i.args.includes('REPLYFLOW_SKIP_TEMPORAL_BINARIES=1'),
    );
    assert.ok(skip, 'the install stage sets REPLYFLOW_SKIP_TEMPORAL_BINARIES=1');
    const postinstall = readFileSync(path.join(PROJECT_ROOT, 'scripts/install-temporal-binaries.ts'), 'utf8');
    assert.match(postinstall, /REPLYFLOW_SKIP_TEMPORAL_BINARIES === '1'/);
    // The stage copies the hook alone: a static import of a project module would fail before the skip.
    assert.doesNotMatch(postinstall, /^import .* from '\.\.?\//m);
  });

  it('runs as a non-root user, the receiver by default', () => {
    const runtime = instructions.filter((i) => i.stage === 'runtime');
    const user = runtime.filter((i) => i.keyword === 'USER').at(-1);
    assert.ok(user, 'USER in the runtime stage');
    assert.ok(!/^(0|root)(:|$)/.test(user.args), `USER ${user.args}`);
    assert.equal(runtime.find((i) => i.keyword === 'ENTRYPOINT')?.args, '["node", "bin/replyflow.js"]');
    assert.equal(runtime.find((i) => i.keyword === 'CMD')?.args, '["receiver"]');
  });

  it('copies only paths that exist and that .dockerignore lets into the build context', () => {
    const ignored = readFileSync(path.join(PROJECT_ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith('#'));
    for (const source of copiedFromContext(instructions)) {
      assert.ok(existsSync(path.join(PROJECT_ROOT, source)), `${source} exists`);
      const top = source.split('/')[0]!;
      assert.ok(!ignored.includes(top), `${source} is excluded by .dockerignore`);
    }
    for (const secret of ['.env', '.git', 'node_modules', '.tools', '.data'])
      assert.ok(ignored.includes(secret));
  });

  it('has every package the copied code imports in `dependencies`, which `npm ci --omit=dev` installs', () => {
    const copiedDirs = copiedFromContext(instructions.filter((i) => i.stage === 'runtime')).filter((source) =>
      ['bin', 'src', 'workflows', 'activities'].includes(source),
    );
    assert.deepEqual(copiedDirs.sort(), ['activities', 'bin', 'src', 'workflows']);
    const missing = copiedDirs
      .flatMap(sourceFiles)
      .flatMap((file) => runtimePackages(file).map((name) => ({ file, name })))
      .filter(({ name }) => !(name in pkg.dependencies));
    assert.deepEqual(missing, [], 'move these to dependencies: the image would fail to start without them');
  });
});
