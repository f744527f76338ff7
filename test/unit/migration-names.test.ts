import { describe, expect, it } from 'vitest';
import { migrations } from '../../src/store/migrations/index.js';
import { MIGRATION_NAMES } from '../../src/store/migrations/names.js';

describe('MIGRATION_NAMES', () => {
  it('lists every migration of migrations/index.ts, in its order (opening the database checks these names without loading the migrations)', () => {
    expect(MIGRATION_NAMES).toEqual(Object.keys(migrations));
  });
});
