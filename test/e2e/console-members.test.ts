import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startServer, type TestServer } from '../helpers/server.js';
import { BROWSER_TESTS, CHROMIUM_ARGS, noticeWithoutBrowser, requireBrowser } from '../helpers/browser.js';
import { seriousA11yFindings } from '../helpers/web-app-browser.js';
import { createMember, loginPage, memberClient, type ConsoleClient } from '../helpers/console.js';

/**
 * The workspace's members and their roles (`GET|PATCH /console/api/members`), and the members page
 * in a real browser: an admin changes an editor's role with the keyboard; the rules of Dify's
 * members page (never one's own role; only the owner gives or takes admin and owner).
 */
noticeWithoutBrowser('the console members browser test is');

let s: TestServer;
let owner: ConsoleClient;
let admin: ConsoleClient;
let ids: Record<string, string>;

beforeAll(async () => {
  s = await startServer();
  owner = await memberClient(s, { name: 'Olive', email: 'olive@example.test', role: 'owner' });
  admin = await memberClient(s, { name: 'Ada', email: 'ada@example.test', role: 'admin' });
  const eddie = await createMember(s, { name: 'Eddie', email: 'eddie@example.test', role: 'editor' });
  const vera = await createMember(s, { name: 'Vera', email: 'vera@example.test', role: 'viewer' });
  const other = await createMember(s, { name: 'Otto', email: 'otto@example.test', role: 'editor', workspace: 'Elsewhere' });
  const members = (await owner.get<{ data: { id: string; name: string }[] }>('/members')).body.data;
  ids = Object.fromEntries(members.map((m) => [m.name, m.id]));
  Object.assign(ids, { Eddie: eddie.id, Vera: vera.id, Otto: other.id });
}, 120_000);
afterAll(async () => {
  await s?.close();
});

describe('members and roles', () => {
  it('lists the workspace\'s members with their roles, and only theirs', async () => {
    const r = await admin.get<{ data: { name: string; role: string; has_password: boolean }[]; total: number }>('/members');
    expect(r.status).toBe(200);
    expect(r.body.data.map((m) => [m.name, m.role])).toEqual([
      ['Ada', 'admin'],
      ['Eddie', 'editor'],
      ['Olive', 'owner'],
      ['Vera', 'viewer'],
    ]);
    expect(r.body.data.every((m) => m.has_password)).toBe(true);
  });

  it('an admin changes an editor to a viewer; the change holds for the member\'s next request', async () => {
    const eddie = await memberClient(s, { name: 'Eddie', email: 'eddie@example.test', role: 'editor' });
    expect((await eddie.get('/session')).body).toMatchObject({ account: { role: 'editor' } });
    const r = await admin.patch<{ role: string }>(`/members/${ids.Eddie}`, { role: 'viewer' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ name: 'Eddie', role: 'viewer' });
    expect((await eddie.get('/session')).body).toMatchObject({ account: { role: 'viewer' } });
    expect((await admin.patch(`/members/${ids.Eddie}`, { role: 'editor' })).status).toBe(200);
  });

  it('refuses what Dify refuses, naming why: one\'s own role, admin and owner by an admin, a bad role, another workspace, a viewer', async () => {
    expect(await admin.patch(`/members/${ids.Ada}`, { role: 'owner' })).toMatchObject({ status: 403, body: { code: 'forbidden', message: 'You cannot change your own role.' } });
    expect(await admin.patch(`/members/${ids.Vera}`, { role: 'admin' })).toMatchObject({ status: 403, body: { message: 'Only the owner gives or takes the admin and owner roles.' } });
    expect(await admin.patch(`/members/${ids.Olive}`, { role: 'viewer' })).toMatchObject({ status: 403 });
    expect(await admin.patch(`/members/${ids.Vera}`, { role: 'boss' })).toMatchObject({ status: 400, body: { code: 'invalid_param', message: 'role must be one of: "viewer", "editor", "admin", "owner"' } });
    expect(await admin.patch(`/members/${ids.Vera}`, {})).toMatchObject({ status: 400 });
    expect(await admin.patch(`/members/${ids.Otto}`, { role: 'viewer' })).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await admin.patch(`/members/${ids.Vera}`, { role: 'editor' }, { csrf: false })).toMatchObject({ status: 403, body: { code: 'csrf_token_invalid' } });
    const vera = await memberClient(s, { name: 'Vera', email: 'vera@example.test', role: 'viewer' });
    expect(await vera.patch(`/members/${ids.Eddie}`, { role: 'viewer' })).toMatchObject({ status: 403, body: { code: 'forbidden' } });
    // the owner may: an admin made an editor and back
    expect(await owner.patch(`/members/${ids.Ada}`, { role: 'editor' })).toMatchObject({ status: 200, body: { role: 'editor' } });
    expect(await owner.patch(`/members/${ids.Ada}`, { role: 'admin' })).toMatchObject({ status: 200, body: { role: 'admin' } });
  });
});

describe.runIf(BROWSER_TESTS)('the members page in a browser', { timeout: 120_000 }, () => {
  let browser: Browser;
  afterAll(async () => {
    await browser?.close();
  });

  it('an admin changes a role with the keyboard; their own and the owner\'s cannot be changed; axe finds nothing serious', async () => {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: requireBrowser(), args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: 'en-US' });
    const page = await context.newPage();
    await loginPage(page, s.url, 'ada@example.test');
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('heading', { name: 'Members' }).waitFor();
    expect(await page.getByRole('combobox', { name: 'Role of Ada' }).count()).toBe(0);
    expect(await page.getByRole('combobox', { name: 'Role of Olive' }).count()).toBe(0);
    const eddie = page.getByRole('combobox', { name: 'Role of Eddie' });
    // an admin is offered only the roles an admin may give
    expect(await eddie.locator('option').allTextContents()).toEqual(['viewer', 'editor']);
    await eddie.focus();
    await eddie.selectOption('viewer');
    await page.getByText('Eddie is now viewer.').waitFor();
    expect((await owner.get<{ data: { name: string; role: string }[] }>('/members')).body.data.find((m) => m.name === 'Eddie')!.role).toBe('viewer');
    expect(await seriousA11yFindings(page)).toEqual([]);
    await context.close();
  });
});
