// Temporal's own account of its starts, read from the dev server's Prometheus endpoint (its frontend's
// latency histogram for StartWorkflowExecution): with it, a bench phase tells a server that was slow
// to start runs from a receiver whose deliveries waited for a place. Beside it, how long the history
// shard's persistence calls waited for their turn: the dev server has one shard, and the shard lets one
// persistence call run at a time (history.shardIOConcurrency, 1 by default), so a start that waits
// there waits behind every write of the server, the worker's task completions included.
import http from 'node:http';

/** Calls so far of one kind: how many, and in how many seconds together. */
interface Tally {
  count: number;
  seconds: number;
}

/**
 * StartWorkflowExecution calls the frontend answered, and the waits of the history shard's
 * persistence calls for their turn (its IO semaphore, `semaphore_latency` of operation ShardInfo).
 */
interface ServerStarts extends Tally {
  shardWaits: Tally;
}

/** The frontend's starts and the shard's waits in a Prometheus text exposition, over every namespace. */
export function parseServerStarts(text: string): ServerStarts {
  const starts: ServerStarts = { count: 0, seconds: 0, shardWaits: { count: 0, seconds: 0 } };
  for (const line of text.split('\n')) {
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.includes('operation="StartWorkflowExecution"') && line.includes('service_name="frontend"')) {
      if (line.startsWith('service_latency_count{')) starts.count += value;
      else if (line.startsWith('service_latency_sum{')) starts.seconds += value;
    } else if (line.includes('operation="ShardInfo"') && line.includes('service_name="history"')) {
      if (line.startsWith('semaphore_latency_count{')) starts.shardWaits.count += value;
      else if (line.startsWith('semaphore_latency_sum{')) starts.shardWaits.seconds += value;
    }
  }
  return starts;
}

/** Reads `metricsUrl`; undefined where there is none (the cluster) or it does not answer. */
async function serverStarts(metricsUrl: string | undefined): Promise<ServerStarts | undefined> {
  if (!metricsUrl) return undefined;
  // Not fetch: the endpoint is on a port browsers refuse (src/temporal/dev-server.ts), and fetch does too.
  const text = await new Promise<string | undefined>((resolve) => {
    http
      .get(metricsUrl, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve(body));
      })
      .on('error', () => resolve(undefined));
  });
  return text === undefined ? undefined : parseServerStarts(text);
}

/** The mean of the calls between two tallies, in ms. */
const meanMs = (before: Tally, after: Tally) =>
  (((after.seconds - before.seconds) * 1000) / (after.count - before.count)).toFixed(1);

/**
 * The starts between two readings, as a bench row says them: their count and mean latency, and the
 * shard's persistence calls meanwhile with their mean wait for a turn (a start makes several).
 */
export function serverStartsSince(before: ServerStarts | undefined, after: ServerStarts | undefined): string {
  if (!before || !after || after.count <= before.count) return 'not measured';
  const starts = `${after.count - before.count} starts, mean ${meanMs(before, after)} ms`;
  const waits = after.shardWaits.count - before.shardWaits.count;
  if (waits <= 0) return starts;
  return `${starts}; the shard's persistence calls: ${waits}, waiting for a turn ${meanMs(before.shardWaits, after.shardWaits)} ms on average`;
}

/** Runs `phase` and says what the server answered meanwhile (serverStartsSince), read before and after it. */
export async function duringPhase<T>(
  metricsUrl: string | undefined,
  phase: () => Promise<T>,
): Promise<{ result: T; serverStarts: string }> {
  const before = await serverStarts(metricsUrl);
  const result = await phase();
  return { result, serverStarts: serverStartsSince(before, await serverStarts(metricsUrl)) };
}
