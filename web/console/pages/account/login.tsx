import { useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError, setCsrfToken, type Session } from '../../lib/console-api.js';
import { useT } from '../../lib/i18n.js';
import { LanguagePicker } from '../../components/language-picker.js';

/** `/console/login`: email and password; afterwards the page the person came for (`?next=`), else the apps. */
export function LoginPage({ onLoggedIn }: { onLoggedIn: (s: Session, next: string) => void }) {
  const t = useT();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s = await consoleApi.post<Session>('/login', { email, password }, { noRedirect: true });
      setCsrfToken(s.csrf_token);
      const next = new URLSearchParams(location.search).get('next');
      onLoggedIn(s, next && next.startsWith('/console/') && !next.startsWith('/console/login') ? next : '/console/apps');
    } catch (err) {
      setError(err instanceof ConsoleApiError ? err.message : String(err));
      setBusy(false);
    }
  };
  return (
    <main class="login-page" data-ready="true">
      <div class="login-card">
        <div class="login-top">
          <span class="brand">Dovetail</span>
          <LanguagePicker />
        </div>
        <h1 id="page-title">{t('login.title')}</h1>
        <form onSubmit={(e) => void submit(e)} aria-describedby={error ? 'login-error' : undefined}>
          <label for="login-email">{t('login.email')}</label>
          <input id="login-email" type="email" name="email" autoComplete="username" required value={email} onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
          <label for="login-password">{t('login.password')}</label>
          <input id="login-password" type="password" name="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
          {error && (
            <p id="login-error" class="form-error" role="alert">
              {error}
            </p>
          )}
          <button type="submit" class="btn primary wide" disabled={busy}>
            {busy ? t('login.working') : t('login.submit')}
          </button>
        </form>
        <p class="hint">{t('login.hint')}</p>
      </div>
    </main>
  );
}
