/**
 * The web call widget (docs/web-calls.md): one script tag puts a "Talk to us" button on any page.
 *
 *   <script type="module" src="https://openline.example.com/client/widget.js"
 *           data-token-url="/openline-token" data-label="Talk to us"></script>
 *
 * `data-token-url`: a URL of the page's own back end that calls POST /v1/agents/{id}/authorize
 * with the API key and answers `{"token": "..."}` (fetched with POST for every call); or
 * `data-token`: a token written into the page, used for every call (a reusable one, from authorize
 * with `reusable`, for a static page every visitor loads).
 */
import { startWebCall, type WebCall } from './openline.js';

const STYLE = `
.openline-widget{position:fixed;right:20px;bottom:20px;z-index:2147483000;font:14px/1.4 system-ui,sans-serif;
  display:flex;flex-direction:column;align-items:flex-end;gap:8px}
.openline-widget button{border:0;border-radius:999px;padding:12px 20px;background:#1d4ed8;color:#fff;font:inherit;
  font-weight:600;cursor:pointer;box-shadow:0 4px 14px rgba(0,0,0,.2)}
.openline-widget button[data-state=active]{background:#b91c1c}
.openline-widget .openline-lines{max-width:320px;max-height:240px;overflow:auto;background:#fff;color:#111;
  border-radius:12px;padding:8px 12px;box-shadow:0 4px 14px rgba(0,0,0,.15)}
.openline-widget .openline-lines:empty{display:none}
.openline-widget .openline-lines p{margin:4px 0}
`;

function mount(script: HTMLScriptElement): void {
  const label = script.dataset.label ?? 'Talk to us';
  const root = document.createElement('div');
  root.className = 'openline-widget';
  const style = document.createElement('style');
  style.textContent = STYLE;
  const lines = document.createElement('div');
  lines.className = 'openline-lines';
  lines.setAttribute('aria-live', 'polite');
  const button = document.createElement('button');
  button.type = 'button';
  button.textContent = label;
  root.append(style, lines, button);
  document.body.append(root);

  let call: WebCall | undefined;
  const line = (text: string) => {
    const p = document.createElement('p');
    p.textContent = text;
    lines.append(p);
    lines.scrollTop = lines.scrollHeight;
  };
  const idle = () => {
    call = undefined;
    button.dataset.state = 'idle';
    button.textContent = label;
    button.disabled = false;
  };

  async function token(): Promise<string> {
    if (script.dataset.token) return script.dataset.token;
    const url = script.dataset.tokenUrl;
    if (!url) throw new Error('the widget needs data-token-url or data-token');
    const response = await fetch(url, { method: 'POST' });
    const body = (await response.json()) as { token?: string };
    if (!response.ok || !body.token) throw new Error(`${url} gave no token`);
    return body.token;
  }

  button.addEventListener('click', async () => {
    if (call) return call.stop();
    button.disabled = true;
    button.textContent = 'Connecting…';
    lines.replaceChildren();
    try {
      const server = script.dataset.server ?? new URL(script.src).origin;
      call = await startWebCall({ token: await token(), server });
      button.dataset.state = 'active';
      button.textContent = 'End call';
      button.disabled = false;
      call.on('transcript', ({ role, text }) => line(`${role === 'user' ? 'You' : 'Agent'}: ${text}`));
      call.on('notice', ({ message }) => line(message));
      call.on('ended', ({ reason, message }) => {
        // The page says why a call ended that the person did not end themselves.
        if (reason !== 'local') line(message);
        idle();
      });
    } catch (error) {
      line(error instanceof Error ? error.message : String(error));
      idle();
    }
  });
}

for (const script of document.querySelectorAll<HTMLScriptElement>('script[src*="/client/widget.js"]')) mount(script);
