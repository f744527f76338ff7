import { useT } from '../../lib/i18n.js';

/** One import warning, as the API (and `dovetail app import --json`) gives it. */
export interface ImportWarning {
  node_id: string;
  node_type: string;
  part: string;
  setting: string | null;
  message: string;
}

/** The warnings as the CLI prints them: `warning: MESSAGE [setting: NAME]`, one a line. */
export function WarningList({ warnings }: { warnings: readonly ImportWarning[] }) {
  const t = useT();
  if (warnings.length === 0) return <p class="ok-line">{t('import.noWarnings')}</p>;
  return (
    <div class="warnings" role="region" aria-label={t('import.warnings', { n: warnings.length })}>
      <h3>{t('import.warnings', { n: warnings.length })}</h3>
      <ul>
        {warnings.map((w) => (
          <li>
            <code class="warning-line">
              warning: {w.message}
              {w.setting ? ` [setting: ${w.setting}]` : ''}
            </code>
          </li>
        ))}
      </ul>
    </div>
  );
}
