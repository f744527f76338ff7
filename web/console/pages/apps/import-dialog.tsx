import { useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError } from '../../lib/console-api.js';
import { useT } from '../../lib/i18n.js';
import { Dialog, FormFooter } from '../../components/dialog.js';
import { WarningList, type ImportWarning } from './warnings.js';

interface Preview {
  name: string;
  mode: string;
  datasets: { id: string; exists: boolean }[];
  tools: { id: string; exists: boolean }[];
  available_datasets: { id: string; name: string }[];
  available_workflow_apps: { id: string; name: string }[];
}

export interface ImportResult {
  app: { id: string; name: string; version: number };
  warnings: ImportWarning[];
}

/**
 * Import a DSL file (or, with `appId`, a new version of that app): pick the file, see what it
 * points at (datasets, workflow tools) and map each to one of this workspace's by picking from a
 * list, then import; the warnings are shown as `dovetail app import` prints them.
 */
export function ImportDialog({ open, appId, onClose, onDone }: { open: boolean; appId?: string; onClose: () => void; onDone: (r: ImportResult) => void }) {
  const t = useT();
  const [yaml, setYaml] = useState<string | null>(null);
  const [fileName, setFileName] = useState('');
  const [preview, setPreview] = useState<Preview | null>(null);
  const [datasets, setDatasets] = useState<Record<string, string>>({});
  const [tools, setTools] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<ImportResult | null>(null);

  const reset = () => {
    setYaml(null);
    setFileName('');
    setPreview(null);
    setDatasets({});
    setTools({});
    setError(null);
    setResult(null);
    setBusy(false);
  };
  const close = () => {
    reset();
    onClose();
  };

  const pick = async (file: File | undefined) => {
    setError(null);
    setPreview(null);
    setResult(null);
    if (!file) return;
    const text = await file.text();
    setYaml(text);
    setFileName(file.name);
    try {
      setPreview(await consoleApi.post<Preview>('/apps/import/preview', { yaml: text }));
    } catch (err) {
      setError(err instanceof ConsoleApiError ? err.message : String(err));
    }
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!yaml) return;
    setBusy(true);
    setError(null);
    const body = { yaml, datasets: clean(datasets), tools: clean(tools) };
    try {
      const r = appId ? await consoleApi.put<ImportResult>(`/apps/${encodeURIComponent(appId)}/dsl`, body) : await consoleApi.post<ImportResult>('/apps/import', body);
      setResult(r);
      onDone(r);
    } catch (err) {
      setError(err instanceof ConsoleApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  const title = appId ? t('import.updateTitle') : t('import.title');
  return (
    <Dialog title={title} open={open} onClose={close}>
      {result ? (
        <div class="import-result">
          <p role="status">{appId ? t('import.updated', { name: result.app.name, version: result.app.version }) : t('import.imported', { name: result.app.name })}</p>
          <WarningList warnings={result.warnings} />
          <div class="dialog-foot">
            {!appId && (
              <a class="btn primary" href={`/console/apps/${result.app.id}`} onClick={close}>
                {t('import.open')}
              </a>
            )}
            <button type="button" class="btn" onClick={close}>
              {t('console.close')}
            </button>
          </div>
        </div>
      ) : (
        <form class="stack" onSubmit={(e) => void submit(e)}>
          <label for="dsl-file">{t('import.file')}</label>
          <input id="dsl-file" type="file" accept=".yml,.yaml,application/x-yaml,text/yaml" onChange={(e) => void pick((e.target as HTMLInputElement).files?.[0])} />
          {fileName && preview && <p class="hint">{t('import.about', { name: preview.name, mode: t(`mode.${preview.mode}`) })}</p>}
          {preview && preview.datasets.length > 0 && (
            <fieldset class="mapping">
              <legend>{t('import.datasets')}</legend>
              {preview.datasets.map((d) => (
                <div class="map-row">
                  <label for={`map-ds-${d.id}`}>
                    <code>{d.id}</code> {d.exists ? t('import.existsHere') : t('import.missingHere')}
                  </label>
                  <select id={`map-ds-${d.id}`} value={datasets[d.id] ?? ''} onChange={(e) => setDatasets({ ...datasets, [d.id]: (e.target as HTMLSelectElement).value })}>
                    <option value="">{t('import.keep')}</option>
                    {preview.available_datasets.map((x) => (
                      <option value={x.id}>{x.name}</option>
                    ))}
                  </select>
                </div>
              ))}
            </fieldset>
          )}
          {preview && preview.tools.length > 0 && (
            <fieldset class="mapping">
              <legend>{t('import.tools')}</legend>
              {preview.tools.map((d) => (
                <div class="map-row">
                  <label for={`map-tool-${d.id}`}>
                    <code>{d.id}</code> {d.exists ? t('import.existsHere') : t('import.missingHere')}
                  </label>
                  <select id={`map-tool-${d.id}`} value={tools[d.id] ?? ''} onChange={(e) => setTools({ ...tools, [d.id]: (e.target as HTMLSelectElement).value })}>
                    <option value="">{t('import.keep')}</option>
                    {preview.available_workflow_apps.map((x) => (
                      <option value={x.id}>{x.name}</option>
                    ))}
                  </select>
                </div>
              ))}
            </fieldset>
          )}
          <FormFooter error={error} submitLabel={busy ? t('import.working') : appId ? t('import.updateSubmit') : t('import.submit')} onCancel={close} disabled={!yaml || !preview || busy} className="dialog-foot" />
        </form>
      )}
    </Dialog>
  );
}

function clean(m: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(m).filter(([, v]) => v !== ''));
}
