import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { onEachStore, type OpenedStore } from '../helpers/store-suites.js';
import { AppStore } from '../../src/apps/app-store.js';
import { AppService } from '../../src/apps/app-service.js';
import { KeyService } from '../../src/apps/key-service.js';
import { SecretBox } from '../../src/infra/secret-box.js';
import { ServerKeys } from '../../src/infra/server-keys.js';
import { systemClock } from '../../src/infra/clock.js';
import { DslError } from '../../src/apps/errors.js';

/** AppStore under AppService and KeyService: what the services decide is what the tables hold. */

function workflow(name: string, secret: string): string {
  return stringify({
    app: { name, mode: 'workflow' },
    kind: 'app',
    version: '0.3.1',
    workflow: {
      environment_variables: [{ name: 'token', value_type: 'secret', value: secret }],
      graph: {
        nodes: [
          { id: 'start', data: { type: 'start', title: 'Start', variables: [] } },
          { id: 'end', data: { type: 'end', title: 'End', outputs: [] } },
        ],
        edges: [{ source: 'start', target: 'end', sourceHandle: 'source' }],
      },
    },
  });
}

function secretOf(dsl: { workflow?: { environment_variables?: readonly Record<string, unknown>[] } }): unknown {
  return dsl.workflow?.environment_variables?.[0]?.value;
}

function suite(label: string, open: () => Promise<OpenedStore>): void {
  describe(`AppStore (${label})`, () => {
    let opened: OpenedStore;
    let appStore: AppStore;
    let apps: AppService;
    let keys: KeyService;
    beforeAll(async () => {
      opened = await open();
      appStore = new AppStore(opened.store.db);
      apps = new AppService(appStore, systemClock, new SecretBox(new ServerKeys({ db: opened.store.db, clock: systemClock, secretKey: 'test-secret-key-of-enough-length' })));
      keys = new KeyService(appStore, systemClock);
    });
    afterAll(async () => opened?.close());

    it('stores secrets sealed and versions on update; a stale version is refused and changes nothing', async () => {
      const app = await apps.importDsl(workflow('First', 'plain-1'));
      expect(app.version).toBe(1);
      const stored = await appStore.find(app.id);
      expect(stored?.workspaceId).toBe(await apps.workspaceId());
      expect(secretOf(stored!.dsl)).not.toBe('plain-1');
      expect(secretOf((await apps.find(app.id))!.dsl)).toBe('plain-1');

      const updated = await apps.update(app.id, workflow('Second', 'plain-2'));
      expect(updated).toMatchObject({ name: 'Second', version: 2 });
      expect((await apps.find(app.id))?.name).toBe('Second');
      const v1 = await apps.findVersion(app.id, 1);
      expect(secretOf(v1!.dsl)).toBe('plain-1');
      expect(await appStore.findVersionDsl(app.id, 2)).toBeDefined();

      // A writer that read version 1 loses to the update above.
      expect(await appStore.addVersion(app.id, 1, { name: 'Stale', description: '', icon: '', dsl: stored!.dsl, updatedAt: 1 })).toBe(false);
      expect(await appStore.versionOf(app.id)).toBe(2);
      expect((await appStore.find(app.id))?.name).toBe('Second');
      await expect(apps.update(app.id, stringify({ app: { name: 'X', mode: 'chat' }, kind: 'app', version: '0.3.1', model_config: {} }))).rejects.toThrow(DslError);
    });

    it('the finds of one event-loop turn share one version read; a find in a later turn reads again and sees an update', async () => {
      const app = await apps.importDsl(workflow('Burst', 's'));
      await apps.find(app.id); // cached
      const reads = vi.spyOn(appStore, 'versionOf');
      try {
        const found = await Promise.all(Array.from({ length: 20 }, () => apps.find(app.id)));
        expect(found.every((a) => a?.name === 'Burst')).toBe(true);
        expect(reads).toHaveBeenCalledTimes(1);
        // another process stores version 2; the next turn's find reads the version again
        await appStore.addVersion(app.id, 1, { name: 'Elsewhere', description: '', icon: '', dsl: (await appStore.find(app.id))!.dsl, updatedAt: 2 });
        await new Promise((r) => setImmediate(r));
        expect((await apps.find(app.id))?.name).toBe('Elsewhere');
        expect(reads).toHaveBeenCalledTimes(2);
      } finally {
        reads.mockRestore();
      }
    });

    it('deletes an app with its versions and keys; a key of another app stays', async () => {
      const a = await apps.importDsl(workflow('Doomed', 's'));
      const b = await apps.importDsl(workflow('Kept', 's'));
      const ka = await keys.create('app', a.workspaceId, a.id);
      const kb = await keys.create('app', b.workspaceId, b.id);
      expect(await keys.resolve(ka.apiKey, 'app')).toMatchObject({ id: ka.id, appId: a.id });
      expect(await keys.resolve(ka.apiKey, 'dataset')).toBeUndefined();
      expect((await keys.list()).find((k) => k.id === ka.id)?.lastUsedAt).not.toBeNull();

      expect(await apps.delete(a.id)).toBe(true);
      expect(await apps.delete(a.id)).toBe(false);
      expect(await apps.find(a.id)).toBeUndefined();
      expect(await appStore.findVersionDsl(a.id, 1)).toBeUndefined();
      expect(await apps.update(a.id, workflow('Doomed', 's'))).toBeUndefined();
      const ids = (await keys.list()).map((k) => k.id);
      expect(ids).not.toContain(ka.id);
      expect(ids).toContain(kb.id);
      expect(await keys.resolve(kb.apiKey, 'app')).toMatchObject({ appId: b.id });
      expect(await keys.revoke(kb.id)).toBe(true);
      expect(await keys.revoke(kb.id)).toBe(false);
      expect(await keys.resolve(kb.apiKey, 'app')).toBeUndefined();
    });
  });
}

onEachStore('app-store', suite);
