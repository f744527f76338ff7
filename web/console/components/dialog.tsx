import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { useT } from '../lib/i18n.js';

/**
 * A modal dialog (the native `<dialog>`: focus kept inside, Escape closes, focus returns to what
 * opened it). `onClose` is called on Escape, the close button and the backdrop.
 */
export function Dialog({ title, open, onClose, children, footer }: { title: string; open: boolean; onClose: () => void; children: ComponentChildren; footer?: ComponentChildren }) {
  const t = useT();
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby="dialog-title"
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
      onClick={(e) => {
        if (e.target === ref.current) onClose();
      }}
    >
      <div class="dialog-body">
        <div class="dialog-head">
          <h2 id="dialog-title">{title}</h2>
          <button type="button" class="icon-btn" aria-label={t('console.close')} onClick={onClose}>
            ×
          </button>
        </div>
        <div class="dialog-content">{open && children}</div>
        {footer && <div class="dialog-foot">{footer}</div>}
      </div>
    </dialog>
  );
}

/** "Are you sure?" with the action's own words on its button. */
export function ConfirmDialog({ title, message, confirmLabel, danger, open, onConfirm, onClose }: { title: string; message: ComponentChildren; confirmLabel: string; danger?: boolean; open: boolean; onConfirm: () => void; onClose: () => void }) {
  const t = useT();
  return (
    <Dialog
      title={title}
      open={open}
      onClose={onClose}
      footer={
        <>
          <button type="button" class="btn" onClick={onClose}>
            {t('console.cancel')}
          </button>
          <button type="button" class={`btn ${danger ? 'danger' : 'primary'}`} onClick={onConfirm}>
            {confirmLabel}
          </button>
        </>
      }
    >
      <p>{message}</p>
    </Dialog>
  );
}

/**
 * The end of a form: its error line (read out when it appears), then Cancel (when `onCancel` is
 * given) and the submit button. `className` is the row's class (`form-actions`, or `dialog-foot`
 * in a dialog whose form is its whole body).
 */
export function FormFooter({ error, submitLabel, onCancel, disabled, className = 'form-actions' }: { error: string | null | undefined; submitLabel: string; onCancel?: () => void; disabled?: boolean; className?: string }) {
  const t = useT();
  return (
    <>
      {error && (
        <p class="form-error" role="alert">
          {error}
        </p>
      )}
      <div class={className}>
        {onCancel && (
          <button type="button" class="btn" onClick={onCancel}>
            {t('console.cancel')}
          </button>
        )}
        <button type="submit" class="btn primary" disabled={disabled}>
          {submitLabel}
        </button>
      </div>
    </>
  );
}
