import { useState } from 'preact/hooks';
import type { WebApi } from '../lib/api.js';
import type { Translate } from '../lib/i18n.js';
import type { SiteSettings } from '../lib/types.js';
import { AppIcon, HumanInputForm, Markdown, StepList } from '../shared/components.js';
import { Icon } from '../shared/icons.js';
import type { Turn } from './turn.js';

/**
 * A question. `userName`: the embedding site's `userVariables.name` (Dify's embed config), shown as
 * the question's avatar (its first letter) and read out instead of "You".
 */
export function Question({ turn, t, userName }: { turn: Turn; t: Translate; userName?: string | undefined }) {
  const name = userName?.trim();
  return (
    <div class="msg question">
      <div class="bubble">
        <span class="sr-only">{name || t('you')}: </span>
        <p class="question-text">{turn.query}</p>
        {turn.files.length > 0 && (
          <ul class="file-chips">
            {turn.files.map((f, i) => (
              <li class="chip" key={i}>
                <Icon name="doc" size={16} /> <span class="chip-name">{f.name}</span>
              </li>
            ))}
          </ul>
        )}
      </div>
      {name && (
        <span class="avatar user" aria-hidden="true" title={name}>
          {Array.from(name)[0]!.toUpperCase()}
        </span>
      )}
    </div>
  );
}

export interface AnswerProps {
  turn: Turn;
  site: SiteSettings;
  t: Translate;
  api: WebApi;
  isLast: boolean;
  busy: boolean;
  showSteps: boolean;
  showCitations: boolean;
  onRegenerate: () => void;
  onFeedback: (rating: 'like' | 'dislike' | null, content?: string) => Promise<void>;
  /** Awaited before a Human Input answer is sent (the page reopens the run's stream). */
  beforeHumanInputSubmit: () => Promise<void>;
}

export function Answer(p: AnswerProps) {
  const { turn, t } = p;
  const [commenting, setCommenting] = useState<'like' | 'dislike' | null>(null);
  const [comment, setComment] = useState('');
  const [thanks, setThanks] = useState(false);
  const [copied, setCopied] = useState(false);
  const streaming = turn.status === 'streaming';

  async function rate(rating: 'like' | 'dislike') {
    const next = turn.feedback === rating ? null : rating;
    await p.onFeedback(next);
    setCommenting(next);
    setThanks(false);
  }
  async function sendComment(e: Event) {
    e.preventDefault();
    if (!commenting) return;
    await p.onFeedback(commenting, comment.trim());
    setCommenting(null);
    setComment('');
    setThanks(true);
  }
  function copy() {
    void navigator.clipboard?.writeText(turn.answer).then(() => {
      setCopied(true);
      setTimeout(() => setCopied(false), 1500);
    });
  }

  return (
    <div class={`msg answer ${turn.status}`} aria-busy={streaming}>
      {p.site.use_icon_as_answer_icon ? <AppIcon site={p.site} size={32} /> : <span class="avatar bot" aria-hidden="true" />}
      <div class="bubble">
        <span class="sr-only">{t('answerFrom', { name: p.site.title })}: </span>
        {p.showSteps && <StepList steps={turn.steps} t={t} />}
        {turn.answer ? <Markdown text={turn.answer} class="answer-text" /> : streaming ? <span class="typing" aria-label={t('running')}><i /><i /><i /></span> : null}
        {turn.answerFiles.filter((f) => f.type === 'image' && f.url).map((f) => (
          <img class="answer-image" src={f.url} alt="" key={f.id} />
        ))}
        {turn.humanInput && <HumanInputForm form={turn.humanInput} api={p.api} t={t} beforeSubmit={p.beforeHumanInputSubmit} />}
        {turn.status === 'error' && (
          <p class="error" role="alert">
            {t('error', { message: turn.error })}
          </p>
        )}
        {turn.status === 'stopped' && <p class="hint">{t('stopped')}</p>}
        {p.showCitations && turn.citations.length > 0 && (
          <details class="citations">
            <summary>
              {t('citations')} ({turn.citations.length})
            </summary>
            <ol>
              {turn.citations.map((c, i) => (
                <li key={c.segment_id ?? i}>
                  <span class="citation-doc">
                    <Icon name="doc" size={14} /> {c.document_name || c.dataset_name}
                  </span>
                  {c.score !== undefined && c.score !== null && <span class="hint"> · {Number(c.score).toFixed(2)}</span>}
                  {c.content && <p class="citation-text">{c.content}</p>}
                </li>
              ))}
            </ol>
          </details>
        )}
        {!streaming && turn.id && turn.status !== 'paused' && (
          <div class="msg-actions">
            <button type="button" class="icon-btn" aria-label={copied ? t('copied') : t('copy')} title={t('copy')} onClick={copy}>
              <Icon name={copied ? 'check' : 'copy'} size={18} />
            </button>
            {p.isLast && (
              <button type="button" class="icon-btn" aria-label={t('regenerate')} title={t('regenerate')} disabled={p.busy} onClick={p.onRegenerate}>
                <Icon name="redo" size={18} />
              </button>
            )}
            <button type="button" class={`icon-btn ${turn.feedback === 'like' ? 'active' : ''}`} aria-label={turn.feedback === 'like' ? t('undoFeedback') : t('like')} aria-pressed={turn.feedback === 'like'} title={t('like')} onClick={() => void rate('like')}>
              <Icon name="up" size={18} />
            </button>
            <button type="button" class={`icon-btn ${turn.feedback === 'dislike' ? 'active' : ''}`} aria-label={turn.feedback === 'dislike' ? t('undoFeedback') : t('dislike')} aria-pressed={turn.feedback === 'dislike'} title={t('dislike')} onClick={() => void rate('dislike')}>
              <Icon name="down" size={18} />
            </button>
            {thanks && (
              <span class="hint" role="status">
                {t('thanks')}
              </span>
            )}
          </div>
        )}
        {commenting && (
          <form class="feedback-form" onSubmit={sendComment}>
            <label class="sr-only" for={`fb-${turn.key}`}>
              {t('feedbackComment')}
            </label>
            <textarea id={`fb-${turn.key}`} rows={2} placeholder={t('feedbackComment')} value={comment} onInput={(e) => setComment(e.currentTarget.value)} />
            <div class="actions">
              <button type="button" class="btn" onClick={() => setCommenting(null)}>
                {t('cancel')}
              </button>
              <button type="submit" class="btn primary">
                {t('sendFeedback')}
              </button>
            </div>
          </form>
        )}
      </div>
    </div>
  );
}
