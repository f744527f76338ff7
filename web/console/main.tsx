import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { consoleApi, ConsoleApiError, loginUrl, roleAtLeast, setCsrfToken, type Session } from './lib/console-api.js';
import { initialLang, LangContext, saveLang, translator, useT, type ConsoleLang } from './lib/i18n.js';
import { SessionContext } from './lib/hooks.js';
import { interceptLinks, matchPath, navigate, useLocation, consolePath } from './lib/router.js';
import { HOME, ROUTES, type ConsoleRoute } from './routes.js';
import { LoginPage } from './pages/account/login.js';
import { LanguagePicker } from './components/language-picker.js';
import { ErrorBanner, Loading } from './components/states.js';
import { Toasts } from './components/toast.js';

/**
 * The console's single page (`/console/…`): the log-in page, or — signed in — the shell (the
 * workspace, the account and log-out, the language, the navigation) around the page the path
 * names (routes.tsx). Everything is read through `/console/api`.
 */

function findRoute(path: string): { route: ConsoleRoute; params: Record<string, string> } | null {
  for (const route of ROUTES) {
    const params = matchPath(route.path, path);
    if (params) return { route, params };
  }
  return null;
}

function Nav({ path, session, onNavigate }: { path: string; session: Session; onNavigate: () => void }) {
  const t = useT();
  const current = findRoute(path);
  const appId = current?.params.appId;
  const allowed = (r: ConsoleRoute) => roleAtLeast(session.account.role, r.minRole);
  const link = (r: ConsoleRoute, params: Record<string, string>) => {
    const href = consolePath(r.path, params);
    const active = current?.route === r;
    return (
      <li>
        <a href={href} aria-current={active ? 'page' : undefined} class={active ? 'active' : undefined} onClick={onNavigate}>
          {t(r.title)}
        </a>
      </li>
    );
  };
  return (
    <nav class="side-nav" aria-label={t('console.nav')}>
      <ul>{ROUTES.filter((r) => r.nav === 'top' && allowed(r)).map((r) => link(r, {}))}</ul>
      {appId && (
        <>
          <h2 class="nav-heading">{t('console.navApp')}</h2>
          <ul>{ROUTES.filter((r) => r.nav === 'app' && allowed(r)).map((r) => link(r, { appId }))}</ul>
        </>
      )}
    </nav>
  );
}

function Shell({ session }: { session: Session }) {
  const t = useT();
  const { path } = useLocation();
  const [menuOpen, setMenuOpen] = useState(false);
  const found = findRoute(path);

  useEffect(() => {
    if (path === '/console' || path === '/console/') navigate(HOME, { replace: true });
  }, [path]);
  // a new page: its title in the tab, and focus on its heading (a screen reader hears where it is)
  useEffect(() => {
    document.title = `${found ? t(found.route.title) : t('console.notFound')} · ${t('console.title')}`;
    setMenuOpen(false);
    const h = document.getElementById('page-title');
    if (h && document.activeElement !== document.body) h.focus();
  }, [path]);

  const logout = async () => {
    await consoleApi.post('/logout').catch(() => undefined);
    setCsrfToken(null);
    location.assign('/console/login');
  };

  let body;
  if (!found) body = <ErrorBanner error={t('console.notFound')} />;
  else if (!roleAtLeast(session.account.role, found.route.minRole)) body = <ErrorBanner error={t('console.forbidden', { role: t(`console.role.${found.route.minRole}`) })} />;
  else {
    const Page = found.route.page;
    body = <Page params={found.params} />;
  }

  return (
    <div class={`shell${menuOpen ? ' menu-open' : ''}`}>
      <a class="skip" href="#main">
        {t('console.skip')}
      </a>
      <header class="topbar">
        <button type="button" class="btn small menu-btn" aria-expanded={menuOpen} aria-controls="side-nav" onClick={() => setMenuOpen(!menuOpen)}>
          {t('console.menu')}
        </button>
        <a class="brand" href={HOME}>
          Dovetail
        </a>
        <span class="workspace-name">{session.workspace.name}</span>
        <div class="topbar-end">
          <span class="who">{t('console.account', { name: session.account.name, role: t(`console.role.${session.account.role}`) })}</span>
          <LanguagePicker />
          <button type="button" class="btn small" onClick={() => void logout()}>
            {t('console.logout')}
          </button>
        </div>
      </header>
      <div id="side-nav" class="side">
        <Nav path={path} session={session} onNavigate={() => setMenuOpen(false)} />
      </div>
      <main id="main" class="content" data-ready="true" tabIndex={-1}>
        {body}
      </main>
      <Toasts />
    </div>
  );
}

function Console() {
  const [lang, setLangState] = useState<ConsoleLang>(initialLang);
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState<Error | null>(null);
  const { path } = useLocation();
  const onLogin = path.startsWith('/console/login');

  const setLang = (l: ConsoleLang) => {
    saveLang(l);
    setLangState(l);
  };
  useEffect(() => saveLang(lang), []);

  useEffect(() => {
    if (session) return;
    consoleApi.get<Session>('/session', { noRedirect: true }).then(
      (s) => {
        setCsrfToken(s.csrf_token);
        setSession(s);
      },
      (err: unknown) => {
        if (err instanceof ConsoleApiError && err.status === 401) {
          setSession(null);
          if (!location.pathname.startsWith('/console/login')) location.replace(loginUrl());
        } else setError(err as Error);
      },
    );
  }, [session === undefined]);

  // signed in already: the log-in page goes on to the console
  useEffect(() => {
    if (session && onLogin) navigate(HOME, { replace: true });
  }, [session, onLogin]);

  let body;
  if (error) body = <ErrorBanner error={error} onRetry={() => location.reload()} />;
  else if (session === undefined) body = <Loading />;
  else if (session === null || onLogin)
    body = onLogin ? (
      <LoginPage
        onLoggedIn={(s, next) => {
          setSession(s);
          navigate(next, { replace: true });
        }}
      />
    ) : (
      <Loading />
    );
  else
    body = (
      <SessionContext.Provider value={session}>
        <Shell session={session} />
      </SessionContext.Provider>
    );
  return <LangContext.Provider value={{ lang, setLang }}>{body}</LangContext.Provider>;
}

const root = document.getElementById('app')!;
root.textContent = '';
document.title = translator(initialLang())('console.title');
interceptLinks(root);
render(<Console />, root);
