import { useRef, useState } from 'preact/hooks';
import { consoleApi } from '../../lib/console-api.js';
import { useFormat, useT } from '../../lib/i18n.js';
import { useLoad, usePoll } from '../../lib/hooks.js';
import { PageHeader } from '../../components/page-header.js';
import { JsonView } from '../../components/code-view.js';
import { ErrorBanner, Loading, StatusBadge, toneOf } from '../../components/states.js';
import type { PageProps } from '../../routes.js';

interface Bar {
  id: string;
  node_id: string;
  title: string;
  type: string;
  start_ms: number;
  end_ms: number | null;
  status: string;
  error: string | null;
  tokens: number;
  elapsed_time: number | null;
  retry_index: number;
  retries: { index: number; error: string | null; at_ms: number }[];
  parent: { type: 'iteration' | 'loop'; node_id: string; execution_id: string | null; round: number | null } | null;
  parallel_run_id: string | null;
  branch: number;
  rounds?: { index: number; start_ms: number }[];
  started_seq: number;
}

interface Pause {
  key: number;
  node_id: string;
  node_title: string;
  form_url: string | null;
  expiration_time: number | null;
  paused_at_ms: number;
  resumed_at_ms: number | null;
  outcome: 'waiting' | 'filled' | 'timeout';
  action: string | null;
}

interface Trace {
  run: { id: string; mode: string; status: string; error: string | null; total_tokens: number; total_steps: number; elapsed_time: number; created_ms: number; finished_ms: number | null; message_id: string | null };
  bars: Bar[];
  pauses: Pause[];
  last_seq: number;
  more: boolean;
  live: boolean;
}

interface NodeDetail {
  id: string;
  title: string;
  type: string;
  status: string;
  error: string | null;
  inputs: unknown;
  outputs: unknown;
  process_data: unknown;
  execution_metadata: unknown;
  elapsed_time: number | null;
  retries: { index: number; error: string | null }[];
}

/** Merges a window of the trace into what the page holds (bars by id, pauses by key). */
function merge(prev: Trace | undefined, next: Trace): Trace {
  if (!prev) return next;
  const bars = new Map(prev.bars.map((b) => [b.id, b]));
  for (const b of next.bars) bars.set(b.id, b);
  const pauses = new Map(prev.pauses.map((p) => [p.key, p]));
  for (const p of next.pauses) pauses.set(p.key, p);
  return { ...next, bars: [...bars.values()].sort((a, b) => a.started_seq - b.started_seq), pauses: [...pauses.values()].sort((a, b) => a.key - b.key) };
}

/** One run on a timeline: a bar per node execution, live while the run goes on, a node's details on click. */
export function RunTracePage({ params }: PageProps) {
  const t = useT();
  const f = useFormat();
  const appId = params.appId!;
  const runId = params.runId!;
  const [trace, setTrace] = useState<Trace | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [selected, setSelected] = useState<string | null>(null);
  const [open, setOpen] = useState<Record<string, boolean>>({});
  const cursor = useRef(0);
  usePoll(
    async () => {
      try {
        // read windows until the log is read through, then wait for more while the run is live
        for (;;) {
          const next = await consoleApi.get<Trace>(`/apps/${encodeURIComponent(appId)}/runs/${encodeURIComponent(runId)}/trace?after_seq=${cursor.current}`);
          cursor.current = next.last_seq;
          setTrace((prev) => merge(prev, next));
          setError(undefined);
          if (!next.more) return next.live;
        }
      } catch (e) {
        setError(e as Error);
        return true;
      }
    },
    1000,
    [appId, runId],
  );
  if (error && !trace) return <ErrorBanner error={error} />;
  if (!trace) return <Loading />;
  const run = trace.run;
  const t0 = run.created_ms;
  const tEnd = Math.max(run.finished_ms ?? 0, ...trace.bars.map((b) => b.end_ms ?? Date.now()), t0 + 1);
  const span = tEnd - t0;
  const pct = (ms: number) => `${Math.max(0, Math.min(100, ((ms - t0) / span) * 100)).toFixed(2)}%`;
  const top = trace.bars.filter((b) => !b.parent);
  const childrenOf = (exec: string) => trace.bars.filter((b) => b.parent?.execution_id === exec);
  const errors = trace.bars.filter((b) => (b.status === 'failed' || b.status === 'exception') && b.error);

  /**
   * The executions of one scope (the run, or one round of an iteration or loop): in start order
   * when they ran on one branch; otherwise one lane per branch, side by side on the same time axis,
   * each lane with its own track of all its bars, then its rows.
   */
  const scope = (bars: Bar[], depth: number) => {
    const branches = [...new Set(bars.map((b) => b.branch))].sort((x, y) => x - y);
    if (branches.length <= 1) return bars.map((b) => row(b, depth));
    return (
      <li class="trace-lanes" key={`lanes-${bars[0]!.id}`}>
        <p class="trace-lanes-note">{t('trace.parallel', { n: branches.length })}</p>
        <ul class="trace-rows">
          {branches.map((k) => {
            const mine = bars.filter((b) => b.branch === k);
            const start = Math.min(...mine.map((b) => b.start_ms));
            const end = Math.max(...mine.map((b) => b.end_ms ?? Date.now()));
            const running = mine.some((b) => b.end_ms === null);
            const headId = `lane-${mine[0]!.id}`;
            return (
              <li key={headId} class={`trace-lane lane-${k % 4}`}>
                <div role="group" aria-labelledby={headId}>
                  <div class="trace-line trace-lane-line">
                    <span class="trace-label trace-lane-label" id={headId}>
                      {t('trace.lane', { n: k + 1, count: mine.length })}
                    </span>
                    <span class="trace-track" aria-hidden="true">
                      {mine.map((b) => (
                        <span class={`trace-bar bar-${toneOf(b.status)}`} style={{ left: pct(b.start_ms), width: `max(3px, calc(${pct(b.end_ms ?? Date.now())} - ${pct(b.start_ms)}))` }} />
                      ))}
                    </span>
                    <span class="trace-time">{running ? '…' : t('logs.seconds', { n: ((end - start) / 1000).toFixed(2) })}</span>
                  </div>
                  <ul class="trace-rows">{mine.map((b) => row(b, depth, true))}</ul>
                </div>
              </li>
            );
          })}
        </ul>
      </li>
    );
  };

  const row = (b: Bar, depth: number, inLane = false) => {
    const kids = b.type === 'iteration' || b.type === 'loop' ? childrenOf(b.id) : [];
    const rounds = [...new Set(kids.map((k) => k.parent?.round ?? -1))].sort((x, y) => x - y);
    const isOpen = open[b.id] ?? false;
    const end = b.end_ms ?? Date.now();
    return (
      <li key={b.id} class={`trace-row depth-${Math.min(depth, 3)}`}>
        <div class="trace-line">
          <span class="trace-label">
            {kids.length > 0 && (
              <button type="button" class="icon-btn trace-fold" aria-expanded={isOpen} aria-label={t(isOpen ? 'trace.fold' : 'trace.unfold', { title: b.title, n: rounds.length })} onClick={() => setOpen({ ...open, [b.id]: !isOpen })}>
                {isOpen ? '▾' : '▸'}
              </button>
            )}
            <button type="button" class={`trace-node${selected === b.id ? ' selected' : ''}`} aria-pressed={selected === b.id} onClick={() => setSelected(b.id)}>
              {b.title}
            </button>
            <span class="trace-tags">
              <StatusBadge tone={toneOf(b.status)}>{t(`logs.st.${b.status}`)}</StatusBadge>
              {!inLane && b.branch > 0 && <span class="tag">{t('trace.branch', { n: b.branch + 1 })}</span>}
              {b.parent && b.parent.round !== null && <span class="tag">{t('trace.round', { n: b.parent.round + 1 })}</span>}
              {b.retry_index > 0 && <span class="tag warn">{t('trace.retries', { n: b.retry_index })}</span>}
              {kids.length > 0 && <span class="tag">{t('trace.rounds', { n: rounds.length })}</span>}
            </span>
          </span>
          <span class="trace-track" aria-hidden="true">
            <span class={`trace-bar bar-${toneOf(b.status)}`} style={{ left: pct(b.start_ms), width: `max(3px, calc(${pct(end)} - ${pct(b.start_ms)}))` }} />
            {b.retries.map((r) => (
              <span class="trace-retry" style={{ left: pct(r.at_ms) }} />
            ))}
          </span>
          <span class="trace-time">{b.end_ms === null ? '…' : t('logs.seconds', { n: ((b.end_ms - b.start_ms) / 1000).toFixed(2) })}</span>
        </div>
        {kids.length > 0 && isOpen && (
          <ul class="trace-rows">
            {rounds.map((r) => (
              <li key={`r${r}`} class="trace-round">
                <span class="trace-round-label">{r >= 0 ? t('trace.round', { n: r + 1 }) : ''}</span>
                <ul class="trace-rows">{scope(kids.filter((k) => (k.parent?.round ?? -1) === r), depth + 1)}</ul>
              </li>
            ))}
          </ul>
        )}
      </li>
    );
  };

  return (
    <>
      <PageHeader title={t('trace.title')} subtitle={run.id} back={{ href: `/console/apps/${appId}/logs`, label: t('nav.logs') }} />
      <dl class="facts">
        <dt>{t('logs.status')}</dt>
        <dd>
          <StatusBadge tone={toneOf(run.status)}>{t(`logs.st.${run.status}`)}</StatusBadge>
        </dd>
        <dt>{t('logs.created')}</dt>
        <dd>{f.dateTime(Math.floor(run.created_ms / 1000))}</dd>
        <dt>{t('logs.duration')}</dt>
        <dd>{t('logs.seconds', { n: run.elapsed_time.toFixed(2) })}</dd>
        <dt>{t('logs.tokens')}</dt>
        <dd>{run.total_tokens}</dd>
        <dt>{t('logs.steps')}</dt>
        <dd>{run.total_steps}</dd>
      </dl>
      {trace.live && (
        <p class="note live" role="status">
          {t('trace.live')}
        </p>
      )}
      {run.error && (
        <div class="error-banner" role="alert">
          {run.error}
        </div>
      )}
      {trace.pauses.map((p) => (
        <div class={`pause-banner ${p.outcome}`} key={p.key} role={p.outcome === 'waiting' ? 'status' : undefined}>
          {p.outcome === 'waiting' ? t('trace.pause', { title: p.node_title }) : t('trace.pauseDone', { title: p.node_title, outcome: t(`logs.st.${p.outcome}`) + (p.action ? ` (${p.action})` : '') })}
          {p.outcome === 'waiting' && p.form_url && (
            <a class="btn small primary" href={p.form_url} target="_blank" rel="noopener">
              {t('trace.openForm')}
            </a>
          )}
        </div>
      ))}
      <div class="trace-layout">
        <section class="trace-timeline" aria-label={t('trace.timeline')}>
          <h2 class="sr-only">{t('trace.timeline')}</h2>
          <ul class="trace-rows">{scope(top, 0)}</ul>
        </section>
        <section class="trace-detail" aria-label={t('trace.details')} aria-live="polite">
          <h2>{t('trace.details')}</h2>
          {selected ? <NodeDetails appId={appId} runId={runId} executionId={selected} bar={trace.bars.find((b) => b.id === selected)} /> : <p class="muted">{t('trace.selectNode')}</p>}
          {errors.length > 0 && (
            <>
              <h3>{t('trace.errors')}</h3>
              <ul class="trace-errors">
                {errors.map((b) => (
                  <li key={b.id}>
                    <button type="button" class="link-btn" onClick={() => setSelected(b.id)}>
                      {b.title}
                    </button>
                    : {b.error}
                  </li>
                ))}
              </ul>
            </>
          )}
        </section>
      </div>
    </>
  );
}

function NodeDetails({ appId, runId, executionId, bar }: { appId: string; runId: string; executionId: string; bar: Bar | undefined }) {
  const t = useT();
  const d = useLoad(() => consoleApi.get<NodeDetail>(`/apps/${encodeURIComponent(appId)}/runs/${encodeURIComponent(runId)}/nodes/${encodeURIComponent(executionId)}`), [executionId, bar?.status]);
  if (d.error) return <ErrorBanner error={d.error} onRetry={d.reload} />;
  if (!d.data) return <Loading />;
  const n = d.data;
  return (
    <div class="node-detail">
      <h3>
        {n.title} <span class="muted">({n.type})</span>
      </h3>
      <p>
        <StatusBadge tone={toneOf(n.status)}>{t(`logs.st.${n.status}`)}</StatusBadge> {n.elapsed_time !== null && t('logs.seconds', { n: n.elapsed_time.toFixed(3) })} {bar && bar.tokens > 0 && `· ${t('logs.tokens')} ${bar.tokens}`}
      </p>
      {n.error && (
        <p class="log-error" role="alert">
          {t('logs.error')}: {n.error}
        </p>
      )}
      {n.retries.length > 0 && (
        <ul class="retry-list">
          {n.retries.map((r) => (
            <li key={r.index}>
              {t('logs.st.retry')} {r.index + 1}: {r.error}
            </li>
          ))}
        </ul>
      )}
      <JsonView value={n.inputs} label={t('trace.inputs')} />
      {n.process_data !== null && <JsonView value={n.process_data} label={t('trace.processData')} />}
      <JsonView value={n.outputs} label={t('trace.outputs')} />
      {n.execution_metadata !== null && <JsonView value={n.execution_metadata} label={t('trace.metadata')} />}
    </div>
  );
}
