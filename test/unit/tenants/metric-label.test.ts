// The tenant label's bound: the first tenants by id, then `other`, and nothing that is not a tenant id.
import assert from 'node:assert/strict';
import { MAX_TENANT_LABELS, OTHER_TENANT, TenantLabels } from '../../../src/tenants/metric-label';

describe('tenant metric labels', () => {
  it('labels the first 100 distinct tenants by id and every later one other', () => {
    const labels = new TenantLabels();
    for (let i = 0; i < MAX_TENANT_LABELS; i++) assert.equal(labels.of(`slack:T${i}`), `slack:T${i}`);
    assert.equal(labels.of('line:Unew'), OTHER_TENANT);
    assert.equal(labels.of('github:424242'), OTHER_TENANT);
    // One already labelled keeps its own label, however often it comes back.
    assert.equal(labels.of('slack:T0'), 'slack:T0');
    assert.equal(labels.of(`slack:T${MAX_TENANT_LABELS - 1}`), `slack:T${MAX_TENANT_LABELS - 1}`);
  });

  it('never makes a label of something that is not a tenant id, and does not count it', () => {
    const labels = new TenantLabels(2);
    for (const hostile of [
      'slack:T1"} 1\nfake_metric{',
      'evil',
      'slack:',
      'sandbox:x',
      `slack:${'T'.repeat(65)}`,
    ])
      assert.equal(labels.of(hostile), OTHER_TENANT);
    assert.equal(labels.of('slack:T1'), 'slack:T1');
    assert.equal(labels.of('line:U2'), 'line:U2');
    assert.equal(labels.of('github:3'), OTHER_TENANT);
  });

  it('gives work without a tenant no tenant label', () => {
    const labels = new TenantLabels();
    assert.equal(labels.of(undefined), undefined);
    assert.equal(labels.of(''), undefined);
  });
});
