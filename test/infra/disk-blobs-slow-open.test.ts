import fs, { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it, vi } from 'vitest';

// A disk whose open() is slow: pipeline() rejects as soon as the body fails, while the temp file is
// still being opened. Removing the temp file at that moment raced its creation and left a stray
// `.part` behind (seen once in CI on a busy machine); here the race is made certain.
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  const slowOpen = ((...args: Parameters<typeof real.open>) => {
    setTimeout(() => (real.open as (...a: unknown[]) => void)(...args), 50);
  }) as typeof real.open;
  const createWriteStream = ((p: fs.PathLike, opts?: object) =>
    real.createWriteStream(p, { ...opts, fs: { open: slowOpen, write: real.write, writev: real.writev, close: real.close } })) as typeof real.createWriteStream;
  return { ...real, default: { ...real, createWriteStream }, createWriteStream };
});

const { DiskBlobs } = await import('../../src/files/blobs/disk-blobs.js');

it('a write whose body fails while its temp file is still opening leaves no temp file behind', async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'dovetail-blobs-'));
  try {
    const blobs = new DiskBlobs(root);
    const body = new Readable({
      read() {
        this.push(Buffer.from('partial'));
        this.destroy(new Error('client went away'));
      },
    });
    await expect(blobs.put('k/broken', body)).rejects.toThrow('client went away');
    await sleep(150); // longer than the slow open
    expect(readdirSync(path.join(root, '.tmp'))).toEqual([]);
    expect(await blobs.read('k/broken')).toBeUndefined();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
