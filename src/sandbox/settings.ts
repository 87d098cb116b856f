// Whether the sandbox runs and with which secrets. It is a local demo: on by default only for
// `replyflow start`, whose secrets are generated once per data dir (never a constant in the repo, so a
// published value cannot sign sandbox webhooks or post "bot" messages into anyone's demo).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config, SandboxSecrets } from '../config';
import { SandboxSettingsError } from '../errors';

const SECRETS_FILE = 'sandbox-secrets.json';

/**
 * The sandbox settings a role runs with: SANDBOX_ENABLED if set, else on only for `replyflow start`
 * (`local`). Secrets come from the environment, else (local only) from the data dir, generated there
 * on first use (mode 0600).
 */
export function resolveSandbox(
  config: Config,
  options: { local: boolean },
): Pick<Config, 'SANDBOX_ENABLED' | 'SANDBOX_WEBHOOK_SECRET' | 'SANDBOX_API_TOKEN'> {
  const enabled = config.SANDBOX_ENABLED ?? options.local;
  if (!enabled)
    return { SANDBOX_ENABLED: false, SANDBOX_WEBHOOK_SECRET: undefined, SANDBOX_API_TOKEN: undefined };
  if (config.SANDBOX_WEBHOOK_SECRET && config.SANDBOX_API_TOKEN)
    return {
      SANDBOX_ENABLED: true,
      SANDBOX_WEBHOOK_SECRET: config.SANDBOX_WEBHOOK_SECRET,
      SANDBOX_API_TOKEN: config.SANDBOX_API_TOKEN,
    };
  if (!options.local)
    throw new SandboxSettingsError(
      'SANDBOX_ENABLED=true needs SANDBOX_WEBHOOK_SECRET and SANDBOX_API_TOKEN, the same on every receiver and worker ' +
        '(only `replyflow start` generates them)',
    );
  const generated = dataDirSecrets(config.REPLYFLOW_DATA_DIR);
  return {
    SANDBOX_ENABLED: true,
    SANDBOX_WEBHOOK_SECRET: config.SANDBOX_WEBHOOK_SECRET ?? generated.webhookSecret,
    SANDBOX_API_TOKEN: config.SANDBOX_API_TOKEN ?? generated.apiToken,
  };
}

export function sandboxSecretsFile(dataDir: string): string {
  return path.join(dataDir, SECRETS_FILE);
}

function dataDirSecrets(dataDir: string): SandboxSecrets {
  const file = sandboxSecretsFile(dataDir);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as SandboxSecrets;
  mkdirSync(dataDir, { recursive: true });
  const secrets: SandboxSecrets = {
    webhookSecret: `whsec_${randomBytes(32).toString('base64')}`,
    apiToken: randomBytes(32).toString('base64url'),
  };
  try {
    // `wx`: two starts racing on a fresh data dir must not end with two different secrets in use.
    writeFileSync(file, `${JSON.stringify(secrets)}\n`, { mode: 0o600, flag: 'wx' });
    return secrets;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return JSON.parse(readFileSync(file, 'utf8')) as SandboxSecrets;
  }
}
