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
# TYPE semaphore_latency histogram
semaphore_latency_sum{operation="ShardInfo",priority="0",service_name="history"} 2.5
semaphore_latency_count{operation="ShardInfo",priority="0",service_name="history"} 100
semaphore_latency_sum{operation="ShardInfo",priority="1",service_name="history"} 0.5
semaphore_latency_count{operation="ShardInfo",priority="1",service_name="history"} 20
semaphore_latency_sum{operation="Other",priority="0",service_name="history"} 7
semaphore_latency_count{operation="Other",priority="0",service_name="history"} 7
`;

/** A reading from a server that reports no shard waits. */
const none = { count: 0, seconds: 0 };

describe("bench: Temporal's own starts", () => {
  it("sums the frontend's StartWorkflowExecution over namespaces, not history's or other calls, and the shard's waits", () => {
    assert.deepEqual(parseServerStarts(EXPOSITION), {
      count: 42,
      seconds: 0.3,
      shardWaits: { count: 120, seconds: 3 },
    });
  });

  it("says the count and mean latency between two readings, and the shard's waits meanwhile", () => {
    assert.equal(
      serverStartsSince(
        { count: 42, seconds: 0.3, shardWaits: { count: 120, seconds: 3 } },
        { count: 542, seconds: 100.3, shardWaits: { count: 1120, seconds: 153 } },
      ),
      "500 starts, mean 200.0 ms; the shard's persistence calls: 1000, waiting for a turn 150.0 ms on average",
    );
  });

  it('says the starts alone where the server reports no waits (no shard metrics)', () => {
    assert.equal(
      serverStartsSince(
        { count: 42, seconds: 0.3, shardWaits: none },
        { count: 542, seconds: 100.3, shardWaits: none },
      ),
      '500 starts, mean 200.0 ms',
    );
  });

  it('says "not measured" without a reading or without a start between them', () => {
    assert.equal(serverStartsSince(undefined, { count: 1, seconds: 1, shardWaits: none }), 'not measured');
    assert.equal(
      serverStartsSince(
        { count: 5, seconds: 1, shardWaits: none },
        { count: 5, seconds: 1, shardWaits: none },
      ),
      'not measured',
    );
  });
});
