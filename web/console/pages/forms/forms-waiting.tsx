import { consoleApi, type Page } from '../../lib/console-api.js';
import { useFormat, useT } from '../../lib/i18n.js';
import { useLoad, usePoll } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { DataTable } from '../../components/data-table.js';
import { EmptyState, ErrorBanner, Loading, StatusBadge } from '../../components/states.js';

interface WaitingForm {
  id: string;
  app_id: string;
  app_name: string;
  workflow_run_id: string;
  node_id: string;
  node_title: string;
  web_page: boolean;
  link: string | null;
  expiration_time: number;
  created_at: number;
}

/** The runs of this workspace paused on Human Input: each form's app, node, link and deadline (refreshed every 10 s). */
export function FormsWaitingPage() {
  const t = useT();
  const f = useFormat();
  const forms = useLoad(() => consoleApi.get<Page<WaitingForm>>('/forms'), []);
  usePoll(() => forms.reload(), 10_000);
  return (
    <>
      <PageHeader title={t('forms.title')} subtitle={t('forms.subtitle')} />
      {forms.error && <ErrorBanner error={forms.error} onRetry={forms.reload} />}
      {!forms.data && !forms.error && <Loading />}
      {forms.data && (
        <DataTable
          caption={t('forms.title')}
          rows={forms.data.data}
          rowKey={(x) => x.id}
          empty={<EmptyState>{t('forms.none')}</EmptyState>}
          columns={[
            { header: t('forms.app'), cell: (x) => <a href={`/console/apps/${x.app_id}`}>{x.app_name}</a> },
            { header: t('forms.node'), cell: (x) => x.node_title },
            { header: t('forms.run'), cell: (x) => <code title={x.workflow_run_id}>{x.workflow_run_id.slice(0, 8)}</code> },
            { header: t('forms.since'), cell: (x) => f.dateTime(x.created_at) },
            { header: t('forms.deadline'), cell: (x) => f.dateTime(x.expiration_time) },
            {
              header: t('forms.form'),
              cell: (x) =>
                x.link ? (
                  <a class="btn small" href={x.link} target="_blank" rel="noopener noreferrer" aria-label={t('forms.openNamed', { node: x.node_title, app: x.app_name })}>
                    {t('forms.open')}
                  </a>
                ) : (
                  <StatusBadge>{x.web_page ? t('forms.editorsOnly') : t('forms.emailOnly')}</StatusBadge>
                ),
            },
          ]}
        />
      )}
    </>
  );
}
