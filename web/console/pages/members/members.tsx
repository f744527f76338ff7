import { consoleApi, type Page, type Role } from '../../lib/console-api.js';
import { useLoad, useSession } from '../../lib/hooks.js';
import { useT } from '../../lib/i18n.js';
import { PageHeader } from '../../components/page-header.js';
import { DataTable } from '../../components/data-table.js';
import { EmptyState, ErrorBanner, Loading, StatusBadge } from '../../components/states.js';
import { toast } from '../../components/toast.js';

interface Member {
  id: string;
  name: string;
  email: string | null;
  role: Role;
  has_password: boolean;
}

const ROLES: readonly Role[] = ['viewer', 'editor', 'admin', 'owner'];
const HIGH = (r: Role) => r === 'admin' || r === 'owner';

/**
 * The workspace's members with their roles (admin and owner). A role is changed in place, as on
 * Dify's members page: never one's own; only the owner gives or takes the admin and owner roles.
 */
export function MembersPage() {
  const t = useT();
  const session = useSession();
  const members = useLoad(() => consoleApi.get<Page<Member>>('/members'), []);
  const me = session.account;
  const changeable = (m: Member) => m.id !== me.id && (me.role === 'owner' || !HIGH(m.role));
  const choices = (m: Member) => (me.role === 'owner' ? ROLES : ROLES.filter((r) => !HIGH(r) || r === m.role));

  async function change(m: Member, role: Role) {
    try {
      await consoleApi.patch(`/members/${m.id}`, { role });
      toast(t('members.changed', { name: m.name, role: t(`console.role.${role}`) }));
    } catch (err) {
      toast((err as Error).message, 'error');
    }
    members.reload();
  }

  return (
    <>
      <PageHeader title={t('members.title')} subtitle={t('members.subtitle')} />
      {members.error && <ErrorBanner error={members.error} onRetry={members.reload} />}
      {!members.data && !members.error && <Loading />}
      {members.data && (
        <DataTable
          caption={t('members.title')}
          rows={members.data.data}
          rowKey={(m) => m.id}
          empty={<EmptyState>{t('members.none')}</EmptyState>}
          columns={[
            { header: t('members.name'), cell: (m) => (m.id === me.id ? `${m.name} (${t('members.you')})` : m.name) },
            { header: t('members.email'), cell: (m) => m.email ?? '—' },
            {
              header: t('members.role'),
              cell: (m) =>
                changeable(m) ? (
                  <select class="role-select" aria-label={t('members.roleOf', { name: m.name })} value={m.role} onChange={(e) => void change(m, e.currentTarget.value as Role)}>
                    {choices(m).map((r) => (
                      <option key={r} value={r}>
                        {t(`console.role.${r}`)}
                      </option>
                    ))}
                  </select>
                ) : (
                  <StatusBadge>{t(`console.role.${m.role}`)}</StatusBadge>
                ),
            },
            { header: t('members.canLogIn'), cell: (m) => (m.has_password ? <StatusBadge tone="success">{t('members.canLogIn')}</StatusBadge> : <StatusBadge>{t('members.noPassword')}</StatusBadge>) },
          ]}
        />
      )}
    </>
  );
}
