import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

const load = (env: Record<string, string>) => loadConfig({ DOVETAIL_CONFIG: undefined as unknown as string, ...env });

describe('role and message lease settings', () => {
  it('the role decides whether the process runs the job worker', () => {
    expect(load({}).role).toBe('all');
    expect(load({}).queue.worker).toBe(true);
    expect(load({ DOVETAIL_ROLE: 'api' }).queue.worker).toBe(false);
    expect(load({ DOVETAIL_ROLE: ' Worker ' })).toMatchObject({ role: 'worker', queue: { worker: true } });
    expect(load({ QUEUE_WORKER: 'false' })).toMatchObject({ role: 'all', queue: { worker: false } });
    // an override (`serve --role`) wins over the environment
    expect(loadConfig({ DOVETAIL_ROLE: 'worker' }, { role: 'api' }).queue.worker).toBe(false);
  });

  it('bad values are config errors naming the setting', () => {
    expect(() => load({ DOVETAIL_ROLE: 'both' })).toThrow(new ConfigError('DOVETAIL_ROLE must be one of api, worker, all, got "both"'));
    expect(() => load({ DOVETAIL_ROLE: 'worker', QUEUE_WORKER: 'false' })).toThrow(/QUEUE_WORKER=false contradicts DOVETAIL_ROLE=worker/);
    expect(load({}).messages).toEqual({ saveIntervalMs: 1000, leaseMs: 10_000 });
    expect(() => load({ MESSAGE_SAVE_INTERVAL_MS: '2000', MESSAGE_LEASE_SECONDS: '2' })).toThrow(
      new ConfigError('MESSAGE_SAVE_INTERVAL_MS (2000) must be shorter than MESSAGE_LEASE_SECONDS (2 s): a live message would look orphaned'),
    );
    expect(() => load({ MESSAGE_LEASE_SECONDS: '0' })).toThrow(/MESSAGE_LEASE_SECONDS must be at least 1/);
    expect(() => load({ DATABASE_POOL_SIZE: '0' })).toThrow(/DATABASE_POOL_SIZE must be at least 1/);
  });
});
