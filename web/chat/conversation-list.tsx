import { useEffect, useRef, useState } from 'preact/hooks';
import type { Translate } from '../lib/i18n.js';
import type { Conversation } from '../lib/types.js';
import { Icon } from '../shared/icons.js';

export interface ConversationActions {
  open(id: string): void;
  newChat(): void;
  rename(id: string, name: string): Promise<void>;
  pin(id: string, pinned: boolean): Promise<void>;
  remove(id: string): Promise<void>;
}

/** The conversation list: pinned first (Dify's `pinned=true` list), then the rest; each with rename, pin and delete. */
export function ConversationList(props: { pinned: Conversation[]; others: Conversation[]; currentId: string | null; t: Translate; actions: ConversationActions; busy: boolean }) {
  const { pinned, others, t } = props;
  return (
    <nav class="conversations" aria-label={t('conversations')}>
      <button type="button" class="btn primary new-chat" onClick={props.actions.newChat} disabled={props.busy}>
        <Icon name="plus" /> {t('newChat')}
      </button>
      {pinned.length > 0 && <Group title={t('pinned')} items={pinned} pinned currentId={props.currentId} t={t} actions={props.actions} busy={props.busy} />}
      <Group title={t('conversations')} items={others} pinned={false} currentId={props.currentId} t={t} actions={props.actions} busy={props.busy} />
      {pinned.length === 0 && others.length === 0 && <p class="hint empty">{t('noConversations')}</p>}
    </nav>
  );
}

function Group(props: { title: string; items: Conversation[]; pinned: boolean; currentId: string | null; t: Translate; actions: ConversationActions; busy: boolean }) {
  if (props.items.length === 0) return null;
  return (
    <section class="conv-group">
      <h2 class="conv-group-title">{props.title}</h2>
      <ul>
        {props.items.map((c) => (
          <Item key={c.id} c={c} {...props} />
        ))}
      </ul>
    </section>
  );
}

function Item({ c, pinned, currentId, t, actions, busy }: { c: Conversation; pinned: boolean; currentId: string | null; t: Translate; actions: ConversationActions; busy: boolean }) {
  const [menu, setMenu] = useState(false);
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const menuRef = useRef<HTMLDivElement>(null);
  const toggleRef = useRef<HTMLButtonElement>(null);
  const name = c.name || t('newChat');

  useEffect(() => {
    if (!menu) return;
    menuRef.current?.querySelector<HTMLButtonElement>('button')?.focus();
    const close = (e: MouseEvent) => {
      if (!menuRef.current?.contains(e.target as Node) && e.target !== toggleRef.current) setMenu(false);
    };
    document.addEventListener('click', close);
    return () => document.removeEventListener('click', close);
  }, [menu]);

  function closeMenu() {
    setMenu(false);
    toggleRef.current?.focus();
  }

  if (editing) return <RenameRow c={c} t={t} onDone={() => setEditing(false)} rename={actions.rename} />;
  return (
    <li class={`conv ${c.id === currentId ? 'current' : ''}`}>
      <button type="button" class="conv-open" aria-current={c.id === currentId ? 'page' : undefined} onClick={() => actions.open(c.id)} disabled={busy}>
        {pinned && <Icon name="pin" size={14} />}
        <span class="conv-name">{name}</span>
      </button>
      <button type="button" ref={toggleRef} class="icon-btn conv-more" aria-label={t('moreActions', { name })} aria-expanded={menu} aria-haspopup="true" onClick={() => setMenu(!menu)}>
        <Icon name="dots" size={18} />
      </button>
      {menu && (
        <div class="menu" ref={menuRef} role="group" aria-label={t('moreActions', { name })} onKeyDown={(e) => e.key === 'Escape' && closeMenu()}>
          <button type="button" onClick={() => (setMenu(false), setEditing(true))}>
            <Icon name="edit" size={16} /> {t('rename')}
          </button>
          <button type="button" onClick={() => (setMenu(false), void actions.pin(c.id, !pinned))}>
            <Icon name="pin" size={16} /> {pinned ? t('unpin') : t('pin')}
          </button>
          <button type="button" class="danger" onClick={() => (setMenu(false), setConfirming(true))}>
            <Icon name="trash" size={16} /> {t('delete')}
          </button>
        </div>
      )}
      {confirming && <ConfirmDialog text={t('deleteConfirm')} ok={t('delete')} cancel={t('cancel')} onClose={(yes) => (setConfirming(false), yes ? void actions.remove(c.id) : toggleRef.current?.focus())} />}
    </li>
  );
}

function RenameRow({ c, t, onDone, rename }: { c: Conversation; t: Translate; onDone: () => void; rename: (id: string, name: string) => Promise<void> }) {
  const [value, setValue] = useState(c.name);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    input.current?.focus();
    input.current?.select();
  }, []);
  async function save(e: Event) {
    e.preventDefault();
    const name = value.trim();
    if (name && name !== c.name) await rename(c.id, name);
    onDone();
  }
  return (
    <li class="conv editing">
      <form class="rename" onSubmit={save}>
        <label class="sr-only" for={`rename-${c.id}`}>
          {t('renameTitle')}
        </label>
        <input id={`rename-${c.id}`} ref={input} value={value} maxLength={200} onInput={(e) => setValue(e.currentTarget.value)} onKeyDown={(e) => e.key === 'Escape' && onDone()} />
        <button type="submit" class="icon-btn" aria-label={t('save')}>
          <Icon name="check" size={18} />
        </button>
        <button type="button" class="icon-btn" aria-label={t('cancel')} onClick={onDone}>
          <Icon name="close" size={18} />
        </button>
      </form>
    </li>
  );
}

/** A modal confirmation on the native `<dialog>` (focus kept inside, Escape cancels). */
export function ConfirmDialog({ text, ok, cancel, onClose }: { text: string; ok: string; cancel: string; onClose: (yes: boolean) => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  return (
    <dialog ref={ref} class="dialog" aria-label={text} onCancel={(e) => (e.preventDefault(), onClose(false))}>
      <p>{text}</p>
      <div class="actions">
        <button type="button" class="btn" onClick={() => onClose(false)}>
          {cancel}
        </button>
        <button type="button" class="btn danger" onClick={() => onClose(true)}>
          {ok}
        </button>
      </div>
    </dialog>
  );
}
