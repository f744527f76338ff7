import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DiskBlobs } from '../../src/files/blobs/disk-blobs.js';
import { describeBlobsContract } from './blobs.contract.js';

const roots = new Map<object, string>();
describeBlobsContract(
  'disk',
  async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'dovetail-blobs-'));
    const b = new DiskBlobs(root);
    roots.set(b, root);
    return b;
  },
  async (b) => {
    // Nothing half-written is left behind by the failed writes of the contract.
    expect(readdirSync(path.join(roots.get(b)!, '.tmp'))).toEqual([]);
    rmSync(roots.get(b)!, { recursive: true, force: true });
  },
  { largeBytes: 12 * 1024 * 1024 },
);

describe('DiskBlobs keys', () => {
  it('a key that climbs out of the store is refused', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'dovetail-blobs-'));
    try {
      await expect(new DiskBlobs(root).read('../outside')).rejects.toThrow(/escapes the store/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
