/**
 * `/embed.min.js`: Dify's chat bubble for any web site, reading the same `window.difyChatbotConfig`
 * as Dify's `web/public/embed.js`, so a site's existing snippet works after changing `baseUrl`:
 * `token` (the site code), `baseUrl`, `inputs` (each value gzip-compressed and base64-encoded in the
 * iframe's query), `systemVariables` (`sys.NAME`), `userVariables` (`user.NAME`), `containerProps`
 * (className, style, on… handlers, other properties of the button), `draggable` and `dragAxis`,
 * `dynamicScript` (run now instead of at the body's `onload`). The bubble button and the iframe keep
 * Dify's element ids (`dify-chatbot-bubble-button`, `dify-chatbot-bubble-window`) and CSS variables,
 * so a site's style overrides keep working. Escape closes the window.
 */
interface DifyChatbotConfig {
  token?: string;
  baseUrl?: string;
  isDev?: boolean;
  inputs?: Record<string, unknown>;
  systemVariables?: Record<string, unknown>;
  userVariables?: Record<string, unknown>;
  containerProps?: Record<string, unknown>;
  draggable?: boolean;
  dragAxis?: 'x' | 'y' | 'both';
  dynamicScript?: boolean;
}

declare global {
  interface Window {
    difyChatbotConfig?: DifyChatbotConfig;
  }
}

const BUTTON_ID = 'dify-chatbot-bubble-button';
const IFRAME_ID = 'dify-chatbot-bubble-window';
const OPEN_ICON =
  '<svg id="openIcon" width="24" height="24" viewBox="0 0 24 24" fill="none" aria-hidden="true"><path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2h-6l-5 4v-4H4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2zm4 6.5a1.5 1.5 0 1 0 0-3 1.5 1.5 0 0 0 0 3zm8 0a1.5 1.5 0 1 0 0-3 1.5 1.5 0 0 0 0 3zM8 12.5c.9 1.3 2.3 2 4 2s3.1-.7 4-2" stroke="white" stroke-width="0" fill="white"/></svg>';
const CLOSE_ICON = '<svg id="closeIcon" style="display:none" width="24" height="24" viewBox="0 0 24 24" fill="none" aria-hidden="true"><path d="M18 18L6 6M6 18L18 6" stroke="white" stroke-width="2" stroke-linecap="round"/></svg>';

function windowStyle(expanded: boolean): string {
  const size = expanded ? 'min-width:24rem;width:48%;max-width:40rem;min-height:43.75rem;height:88%;' : 'width:24rem;height:43.75rem;';
  return `position:fixed;display:flex;flex-direction:column;top:unset;left:unset;right:var(--${BUTTON_ID}-right,1rem);bottom:calc(var(--${BUTTON_ID}-bottom,1rem) + 64px);${size}max-width:calc(100vw - 2rem);max-height:calc(100vh - 6rem);border:none;border-radius:.75rem;box-shadow:0 8px 32px rgba(0,0,0,.18);background:#fff;z-index:2147483640;overflow:hidden;`;
}

async function gzipBase64(value: unknown): Promise<string> {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const stream = new Blob([new TextEncoder().encode(text)]).stream().pipeThrough(new CompressionStream('gzip'));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

async function encoded(values: Record<string, unknown> | undefined, prefix: string): Promise<Array<[string, string]>> {
  return Promise.all(Object.entries(values ?? {}).map(async ([k, v]): Promise<[string, string]> => [prefix + k, await gzipBase64(v)]));
}

async function embedChatbot(config: DifyChatbotConfig): Promise<void> {
  if (!config.token) {
    console.error('difyChatbotConfig is empty or token is not provided');
    return;
  }
  if (document.getElementById(BUTTON_ID)) return;
  const params = new URLSearchParams([...(await encoded(config.inputs, '')), ...(await encoded(config.systemVariables, 'sys.')), ...(await encoded(config.userVariables, 'user.'))]);
  const baseUrl = (config.baseUrl || `https://${config.isDev ? 'dev.' : ''}udify.app`).replace(/\/+$/, '');
  const origin = new URL(baseUrl, location.href).origin;
  const query = params.toString();
  const src = `${baseUrl}/chatbot/${encodeURIComponent(config.token)}${query ? `?${query}` : ''}`;
  if (src.length > 2048) console.error('The URL is too long, please reduce the number of inputs to prevent the bot from failing to load');

  let expanded = false;
  let dragging = false;
  const iframe = document.createElement('iframe');
  iframe.allow = 'fullscreen;microphone';
  iframe.title = 'dify chatbot bubble window';
  iframe.id = IFRAME_ID;
  iframe.src = src;
  iframe.style.cssText = windowStyle(false);
  iframe.style.display = 'none';
  document.body.appendChild(iframe);

  const button = document.createElement('div');
  for (const [key, value] of Object.entries(config.containerProps ?? {})) {
    if (key === 'className' && typeof value === 'string') button.classList.add(...value.split(' ').filter(Boolean));
    else if (key === 'style') {
      if (value && typeof value === 'object') Object.assign(button.style, value);
      else button.style.cssText = String(value);
    } else if (typeof value === 'function') button.addEventListener(key.replace(/^on/, '').toLowerCase(), value as EventListener);
    else (button as unknown as Record<string, unknown>)[key] = value;
  }
  button.id = BUTTON_ID;
  button.setAttribute('role', 'button');
  button.setAttribute('tabindex', '0');
  button.setAttribute('aria-label', 'Open chat');
  button.setAttribute('aria-expanded', 'false');
  button.setAttribute('aria-controls', IFRAME_ID);
  const sheet = document.createElement('style');
  document.head.appendChild(sheet);
  sheet.sheet?.insertRule(
    `#${BUTTON_ID}{position:fixed;bottom:var(--${BUTTON_ID}-bottom,1rem);right:var(--${BUTTON_ID}-right,1rem);left:var(--${BUTTON_ID}-left,unset);top:var(--${BUTTON_ID}-top,unset);width:var(--${BUTTON_ID}-width,48px);height:var(--${BUTTON_ID}-height,48px);border-radius:var(--${BUTTON_ID}-border-radius,25px);background-color:var(--${BUTTON_ID}-bg-color,#155EEF);box-shadow:var(--${BUTTON_ID}-box-shadow,rgba(0,0,0,.2) 0 4px 8px 0);cursor:pointer;z-index:2147483647}`,
  );
  sheet.sheet?.insertRule(`#${BUTTON_ID}:focus-visible{outline:3px solid #0969da;outline-offset:3px}`);
  const icons = document.createElement('div');
  icons.style.cssText = 'position:relative;display:flex;align-items:center;justify-content:center;width:100%;height:100%;';
  icons.innerHTML = OPEN_ICON + CLOSE_ICON;
  button.appendChild(icons);
  document.body.appendChild(button);

  const setIcon = (open: boolean) => {
    (icons.querySelector('#openIcon') as SVGElement).style.display = open ? 'none' : 'block';
    (icons.querySelector('#closeIcon') as SVGElement).style.display = open ? 'block' : 'none';
    button.setAttribute('aria-expanded', String(open));
    button.setAttribute('aria-label', open ? 'Close chat' : 'Open chat');
    button.title = open ? 'Exit (ESC)' : '';
  };
  const isOpen = () => iframe.style.display !== 'none';
  const toggle = () => {
    if (dragging) return;
    iframe.style.display = isOpen() ? 'none' : 'flex';
    setIcon(isOpen());
    if (isOpen()) iframe.focus();
  };
  button.addEventListener('click', toggle);
  button.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      toggle();
    }
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && isOpen()) {
      iframe.style.display = 'none';
      setIcon(false);
      button.focus();
    }
  });

  window.addEventListener('message', (event) => {
    if (event.origin !== origin || event.source !== iframe.contentWindow) return;
    const data = event.data as { type?: string } | null;
    if (data?.type === 'dify-chatbot-iframe-ready') iframe.contentWindow?.postMessage({ type: 'dify-chatbot-config', payload: { isToggledByButton: true, isDraggable: !!config.draggable } }, origin);
    if (data?.type === 'dify-chatbot-expand-change') {
      expanded = !expanded;
      const display = iframe.style.display;
      iframe.style.cssText = windowStyle(expanded);
      iframe.style.display = display;
    }
  });

  if (config.draggable) enableDragging(button, config.dragAxis ?? 'both', (d) => (dragging = d), () => {
    iframe.style.display = 'none';
    setIcon(false);
  });
}

function enableDragging(el: HTMLElement, axis: 'x' | 'y' | 'both', setDragging: (d: boolean) => void, hide: () => void): void {
  let offsetX = 0;
  let offsetY = 0;
  let startX = 0;
  let startY = 0;
  let moved = false;
  const point = (e: MouseEvent | TouchEvent) => ('touches' in e ? e.touches[0]! : e);
  const move = (e: MouseEvent | TouchEvent) => {
    const p = point(e);
    if (!moved && Math.abs(p.clientX - startX) < 8 && Math.abs(p.clientY - startY) < 8) return;
    if (!moved) hide();
    moved = true;
    setDragging(true);
    const rect = el.getBoundingClientRect();
    if (axis !== 'y') el.style.setProperty(`--${BUTTON_ID}-left`, `${Math.max(0, Math.min(p.clientX - offsetX, innerWidth - rect.width))}px`);
    if (axis !== 'x') el.style.setProperty(`--${BUTTON_ID}-bottom`, `${Math.max(0, Math.min(innerHeight - p.clientY - offsetY, innerHeight - rect.height))}px`);
    if (axis !== 'y') el.style.setProperty(`--${BUTTON_ID}-right`, 'unset');
  };
  const end = () => {
    setTimeout(() => setDragging(false), 0);
    document.removeEventListener('mousemove', move);
    document.removeEventListener('touchmove', move);
    document.removeEventListener('mouseup', end);
    document.removeEventListener('touchend', end);
  };
  const start = (e: MouseEvent | TouchEvent) => {
    const p = point(e);
    const rect = el.getBoundingClientRect();
    offsetX = p.clientX - rect.left;
    offsetY = rect.bottom - p.clientY;
    startX = p.clientX;
    startY = p.clientY;
    moved = false;
    document.addEventListener('mousemove', move);
    document.addEventListener('touchmove', move, { passive: true });
    document.addEventListener('mouseup', end);
    document.addEventListener('touchend', end);
  };
  el.addEventListener('mousedown', start);
  el.addEventListener('touchstart', start, { passive: true });
}

const config = window.difyChatbotConfig;
if (config?.dynamicScript || document.readyState === 'complete') void embedChatbot(config ?? {});
else window.addEventListener('load', () => void embedChatbot(config ?? {}));

export {};
