import { createHash } from 'node:crypto';

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

/** A redirect target that stays on this site: a path, never `//host` or a scheme. */
export function safeReturnTo(value: unknown, fallback = '/'): string {
  return typeof value === 'string' && /^\/(?![/\\])[\x21-\x7e]*$/.test(value) ? value : fallback;
}

const STYLE = `
:root{color-scheme:light dark;--bg:#f6f7fb;--card:#fff;--ink:#151826;--muted:#5b6275;--line:#e2e5ee;--accent:#4f46e5;--accent-ink:#fff;--danger:#b42318}
@media (prefers-color-scheme:dark){:root{--bg:#0f1117;--card:#171a23;--ink:#eef0f6;--muted:#a2a8ba;--line:#2a2f3d;--accent:#818cf8;--accent-ink:#0f1117;--danger:#f97066}}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;background:var(--bg);color:var(--ink);display:grid;min-height:100vh;place-items:center;padding:24px}
main{width:100%;max-width:420px;overflow-wrap:anywhere;background:var(--card);border:1px solid var(--line);border-radius:14px;padding:28px;box-shadow:0 8px 30px rgba(0,0,0,.06)}
.brand{display:flex;gap:8px;align-items:center;font-weight:700;margin-bottom:18px}.brand span{display:inline-grid;place-items:center;width:28px;height:28px;border-radius:8px;background:var(--accent);color:var(--accent-ink)}
h1{font-size:20px;margin:0 0 6px}p{color:var(--muted);margin:0 0 16px}label{display:block;font-weight:600;margin:14px 0 6px}
input{width:100%;padding:10px 12px;border-radius:8px;border:1px solid var(--line);background:transparent;color:inherit;font:inherit}
input:focus,button:focus{outline:2px solid var(--accent);outline-offset:2px}
.row{display:flex;gap:10px;margin-top:20px}button{flex:1;padding:10px 14px;border-radius:8px;border:1px solid var(--line);font:inherit;font-weight:600;cursor:pointer;background:transparent;color:inherit}
button.primary{background:var(--accent);color:var(--accent-ink);border-color:var(--accent)}.error{color:var(--danger);font-weight:600}
ul.scopes{padding-left:18px;margin:8px 0 0}ul.scopes li{margin:4px 0}.hint{font-size:13px;color:var(--muted)}a{color:var(--accent)}
form.switch{margin:0 0 16px}p.more{margin:16px 0 0}`;

/** A small, self-contained page (no external assets) in the Tollgate look; `body` must already be escaped. */
export function renderPage(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${escapeHtml(title)} · Tollgate</title><style>${STYLE}</style></head><body><main><div class="brand"><span aria-hidden="true">T</span>Tollgate</div>${body}</main></body></html>`;
}

/**
 * The CSP source that allows {@link renderPage}'s one inline stylesheet, by its hash: the stylesheet is a
 * constant, so no nonce is needed, and no other inline style or script matches it.
 */
export const PAGE_STYLE_SOURCE = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

/**
 * A strict Content-Security-Policy for pages made with {@link renderPage} that carry no `style` attributes
 * (the OAuth sign-in, consent and error pages): no script of any kind, no inline style but the page's own
 * stylesheet, no plugins, no framing, no `<base>`. No `form-action`: browsers apply it to the redirects that
 * follow a form, and consent must end in a redirect to the app.
 */
export const STRICT_PAGE_CSP = `default-src 'none'; script-src 'none'; style-src ${PAGE_STYLE_SOURCE}; frame-ancestors 'none'; base-uri 'none'`;
