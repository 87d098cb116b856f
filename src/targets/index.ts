// The outbound targets a worker has: each entry of the registry (src/targets/registry.ts) whose
// settings are configured, plus `http:<name>` for each of the route file's endpoints.
import type { Config } from '../config';
import type { HttpEndpoint } from './http';
import { TARGETS, type TargetDeps } from './registry';
import type { TargetAdapter } from './types';

export type TargetRegistry = ReadonlyMap<string, TargetAdapter>;

export function createTargets(
  config: Config,
  endpoints: Record<string, HttpEndpoint> = {},
  deps: TargetDeps = {},
): TargetRegistry {
  const targets = TARGETS.flatMap((entry) => entry.create({ ...deps, config, endpoints }));
  return new Map(targets.map((t) => [t.name, t]));
}

/** Which setting enables a built-in target, for error messages that say how to fix a route. */
export const TARGET_SETTINGS: Readonly<Record<string, string>> = Object.fromEntries(
  TARGETS.flatMap((entry) => entry.names.map((name) => [name, entry.enabledBy])),
);
