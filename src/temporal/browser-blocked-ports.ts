// Ports that no browser connects to: the Fetch standard's "bad ports" (fetch.spec.whatwg.org, "port
// blocking"), which browsers refuse for every request, navigation included, under any host name. The
// embedded Temporal puts the listeners it cannot guard there (dev-server.ts).
import { portIsFree } from '../ports';

/**
 * The bad ports an unprivileged process can bind (the rest of the list is below 1024), less 4190 and
 * 6679, which Chromium still connects to (measured: test/browser/hostile-page.test.ts checks each).
 */
export const BROWSER_BLOCKED_PORTS = [
  1719, 1720, 1723, 2049, 3659, 4045, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6697, 10080,
] as const;

/**
 * `count` distinct blocked ports free on 127.0.0.1 now, picked at random so that servers started at
 * the same moment rarely pick the same one; undefined when fewer are free.
 */
export async function freeBlockedPorts(count: number): Promise<number[] | undefined> {
  const free: number[] = [];
  for (const port of BROWSER_BLOCKED_PORTS) if (await portIsFree(port)) free.push(port);
  if (free.length < count) return undefined;
  for (let i = free.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [free[i], free[j]] = [free[j]!, free[i]!];
  }
  return free.slice(0, count);
}
