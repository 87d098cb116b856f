// The registry of outbound targets. A new target is one module under src/targets/ plus one line here.
import type { Config } from '../config';
import { SANDBOX_MODES, sandboxTarget } from './sandbox';
import type { TargetAdapter } from './types';

export type TargetRegistry = ReadonlyMap<string, TargetAdapter>;

export function createTargets(config: Config): TargetRegistry {
  const targets: TargetAdapter[] = [];
  if (config.SANDBOX_ENABLED) {
    const base = config.SANDBOX_API_URL ?? `http://127.0.0.1:${config.PORT}/sandbox/api`;
    for (const mode of SANDBOX_MODES) targets.push(sandboxTarget(mode, base));
  }
  return new Map(targets.map((t) => [t.name, t]));
}
