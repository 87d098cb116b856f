// The bench's reading of Temporal's own start latency (bench/server-starts.ts).
import assert from 'node:assert/strict';
import { parseServerStarts, serverStartsSince } from '../../bench/server-starts';

// As the dev server (Temporal 1.32) exposes them: one series per namespace and service.
const EXPOSITION = `# TYPE service_latency histogram
service_latency_bucket{namespace="default",operation="StartWorkflowExecution",service_name="frontend",le="0.005"} 1
service_latency_sum{namespace="default",operation="StartWorkflowExecution",service_name="frontend"} 0.25
service_latency_count{namespace="default",operation="StartWorkflowExecution",service_name="frontend"} 40
service_latency_sum{namespace="default",operation="StartWorkflowExecution",service_name="history"} 0.1
service_latency_count{namespace="default",operation="StartWorkflowExecution",service_name="history"} 40
service_latency_sum{namespace="temporal_system",operation="StartWorkflowExecution",service_name="frontend"} 0.05
service_latency_count{namespace="temporal_system",operation="StartWorkflowExecution",service_name="frontend"} 2
service_latency_sum{namespace="default",operation="SignalWorkflowExecution",service_name="frontend"} 9
service_latency_count{namespace="default",operation="SignalWorkflowExecution",service_name="frontend"} 9
`;

describe("bench: Temporal's own starts", () => {
  it("sums the frontend's StartWorkflowExecution over namespaces, not history's or other calls", () => {
    assert.deepEqual(parseServerStarts(EXPOSITION), { count: 42, seconds: 0.3 });
  });

  it('says the count and mean latency between two readings', () => {
    assert.equal(
      serverStartsSince({ count: 42, seconds: 0.3 }, { count: 542, seconds: 100.3 }),
      '500 starts, mean 200.0 ms',
    );
  });

  it('says "not measured" without a reading or without a start between them', () => {
    assert.equal(serverStartsSince(undefined, { count: 1, seconds: 1 }), 'not measured');
    assert.equal(serverStartsSince({ count: 5, seconds: 1 }, { count: 5, seconds: 1 }), 'not measured');
  });
});
