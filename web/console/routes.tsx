import type { ComponentType } from 'preact';
import type { Role } from './lib/console-api.js';
import { AppsListPage } from './pages/apps/apps-list.js';
import { AppOverviewPage } from './pages/apps/app-overview.js';
import { AppKeysPage } from './pages/apps/app-keys.js';
import { AppSitePage } from './pages/apps/app-site.js';
import { FormsWaitingPage } from './pages/forms/forms-waiting.js';
import { MembersPage } from './pages/members/members.js';
import { MonitoringAppPage, MonitoringOverallPage } from './pages/monitoring/monitoring-page.js';
import { AnnotationsPage } from './pages/annotations/annotations.js';
import { ImproveAnswerPage } from './pages/annotations/improve-answer.js';
import { DatasetsPage } from './pages/knowledge/datasets.js';
import { DatasetPage } from './pages/knowledge/dataset.js';
import { DocumentPage } from './pages/knowledge/document.js';
import { LogsPage } from './pages/logs/logs-page.js';
import { RunTracePage } from './pages/logs/run-trace.js';

/** What a page receives: the path's parameters (`:appId` …). */
export interface PageProps {
  params: Record<string, string>;
}

/**
 * One entry per console page: its path under `/console` (parameters as `:name`), its component,
 * its title (an i18n key), the least role that may open it, and where the navigation lists it:
 * `top` (the left navigation, always) or `app` (the left navigation while an app is open; the
 * path's `:appId` filled in). Feature helpers add one line each.
 */
export interface ConsoleRoute {
  path: string;
  page: ComponentType<PageProps>;
  title: string;
  minRole: Role;
  nav?: 'app' | 'top';
}

export const ROUTES: readonly ConsoleRoute[] = [
  { path: '/apps', page: AppsListPage, title: 'nav.apps', minRole: 'viewer', nav: 'top' },
  { path: '/forms', page: FormsWaitingPage, title: 'nav.forms', minRole: 'viewer', nav: 'top' },
  { path: '/members', page: MembersPage, title: 'nav.members', minRole: 'admin', nav: 'top' },
  { path: '/apps/:appId', page: AppOverviewPage, title: 'nav.overview', minRole: 'viewer', nav: 'app' },
  { path: '/apps/:appId/site', page: AppSitePage, title: 'nav.site', minRole: 'viewer', nav: 'app' },
  { path: '/apps/:appId/keys', page: AppKeysPage, title: 'nav.keys', minRole: 'admin', nav: 'app' },
  { path: '/monitoring', page: MonitoringOverallPage, title: 'monitoring.title', minRole: 'viewer', nav: 'top' },
  { path: '/apps/:appId/monitoring', page: MonitoringAppPage, title: 'monitoring.title', minRole: 'viewer', nav: 'app' },
  { path: '/apps/:appId/annotations', page: AnnotationsPage, title: 'nav.annotations', minRole: 'viewer', nav: 'app' },
  { path: '/apps/:appId/annotations/improve/:messageId', page: ImproveAnswerPage, title: 'improve.page', minRole: 'editor' },
  { path: '/knowledge', page: DatasetsPage, title: 'nav.knowledge', minRole: 'viewer', nav: 'top' },
  { path: '/knowledge/:datasetId', page: DatasetPage, title: 'kb.title', minRole: 'viewer' },
  { path: '/knowledge/:datasetId/documents/:documentId', page: DocumentPage, title: 'seg.title', minRole: 'viewer' },
  { path: '/apps/:appId/logs', page: LogsPage, title: 'nav.logs', minRole: 'viewer', nav: 'app' },
  { path: '/apps/:appId/runs/:runId', page: RunTracePage, title: 'trace.title', minRole: 'viewer' },
];

/** Where `/console` itself goes. */
export const HOME = '/console/apps';
