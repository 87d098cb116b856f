// Temporal's own account of its starts, read from the dev server's Prometheus endpoint (its frontend's
// latency histogram for StartWorkflowExecution): with it, a bench phase tells a server that was slow
// to start runs from a receiver whose deliveries waited for a place.
import http from 'node:http';

/** StartWorkflowExecution calls so far: how many the frontend answered, and in how many seconds. */
interface ServerStarts {
  count: number;
  seconds: number;
}

/** The frontend's starts in a Prometheus text exposition, over every namespace. */
export function parseServerStarts(text: string): ServerStarts {
  const starts: ServerStarts = { count: 0, seconds: 0 };
  for (const line of text.split('\n')) {
    if (!line.includes('operation="StartWorkflowExecution"') || !line.includes('service_name="frontend"'))
      continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith('service_latency_count{')) starts.count += value;
    else if (line.startsWith('service_latency_sum{')) starts.seconds += value;
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

/** The starts between two readings, as a bench row says them: their count and mean latency. */
export function serverStartsSince(before: ServerStarts | undefined, after: ServerStarts | undefined): string {
  if (!before || !after || after.count <= before.count) return 'not measured';
  const count = after.count - before.count;
  return `${count} starts, mean ${(((after.seconds - before.seconds) * 1000) / count).toFixed(1)} ms`;
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
