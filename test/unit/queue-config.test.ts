import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { concurrencyKey, concurrencyOf } from '../../src/infra/queue/queue.js';

/** `QUEUE` and the per-kind concurrency settings. */
describe('queue settings', () => {
  const env = { DOVETAIL_DATA_DIR: '/nonexistent-dovetail-test', DOVETAIL_CONFIG: undefined as unknown as string };

  it('picks BullMQ when REDIS_URL is set and the embedded runner otherwise; QUEUE overrides', () => {
    expect(loadConfig(env).queue.runner).toBe('embedded');
    expect(loadConfig({ ...env, REDIS_URL: 'redis://127.0.0.1:6379' }).queue.runner).toBe('bullmq');
    expect(loadConfig({ ...env, REDIS_URL: 'redis://127.0.0.1:6379', QUEUE: 'embedded' }).queue.runner).toBe('embedded');
  });

  it('refuses QUEUE=bullmq without REDIS_URL, and an unknown QUEUE, naming the setting', () => {
    expect(() => loadConfig({ ...env, QUEUE: 'bullmq' })).toThrow('QUEUE=bullmq needs REDIS_URL');
    expect(() => loadConfig({ ...env, QUEUE: 'celery' })).toThrow('QUEUE must be bullmq or embedded, got "celery"');
  });

  it('reads QUEUE_CONCURRENCY_<KIND> per kind, falling back to QUEUE_CONCURRENCY; a register option wins', () => {
    const cfg = loadConfig({ ...env, QUEUE_CONCURRENCY: '3', QUEUE_CONCURRENCY_KNOWLEDGE_INDEX: '5' }).queue;
    expect(concurrencyKey('knowledge.index')).toBe('QUEUE_CONCURRENCY_KNOWLEDGE_INDEX');
    expect(concurrencyOf(cfg, 'knowledge.index', undefined)).toBe(5);
    expect(concurrencyOf(cfg, 'human-input.mail', undefined)).toBe(3);
    expect(concurrencyOf(cfg, 'knowledge.index', { concurrency: 1 })).toBe(1);
    expect(() => loadConfig({ ...env, QUEUE_CONCURRENCY_KNOWLEDGE_INDEX: '0' })).toThrow('QUEUE_CONCURRENCY_KNOWLEDGE_INDEX must be at least 1, got 0');
  });
});
