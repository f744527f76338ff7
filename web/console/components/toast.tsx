import { useEffect, useState } from 'preact/hooks';

/** Short notices ("Copied", "Key revoked"): `toast(text)` from anywhere; shown in a polite live region for a few seconds. */
type Listener = (items: readonly ToastItem[]) => void;
interface ToastItem {
  id: number;
  text: string;
  tone: 'info' | 'error';
}
let items: ToastItem[] = [];
let next = 1;
const listeners = new Set<Listener>();
const emit = () => listeners.forEach((l) => l(items));

export function toast(text: string, tone: 'info' | 'error' = 'info'): void {
  const id = next++;
  items = [...items, { id, text, tone }];
  emit();
  setTimeout(() => {
    items = items.filter((i) => i.id !== id);
    emit();
  }, 4000);
}

/** The toasts' region (once, in the shell). */
export function Toasts() {
  const [list, setList] = useState<readonly ToastItem[]>(items);
  useEffect(() => {
    listeners.add(setList);
    return () => void listeners.delete(setList);
  }, []);
  return (
    <div class="toasts" role="status" aria-live="polite">
      {list.map((i) => (
        <div key={i.id} class={`toast toast-${i.tone}`}>
          {i.text}
        </div>
      ))}
    </div>
  );
}
