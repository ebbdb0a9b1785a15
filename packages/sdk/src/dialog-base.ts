/**
 * The accessible modal both dialogs share: a native `<dialog>` opened with `showModal()` (top layer, the page
 * behind made inert), labelled by its title and described by its body, Tab kept inside, Escape closes, and
 * focus returned to whatever had it before. Browser-only: callers reach it through `defineTollgateElements()`.
 */

/**
 * The look of both dialogs; `--tollgate-accent` and friends can be set from the host page. On a phone the
 * actions stack at full width: in a row they wrapped with one button alone on a line of its own.
 */
export const DIALOG_STYLE = `
:host{--tg-bg:var(--tollgate-bg,#fff);--tg-ink:var(--tollgate-ink,#151826);--tg-muted:var(--tollgate-muted,#5b6275);--tg-line:var(--tollgate-line,#e2e5ee);--tg-accent:var(--tollgate-accent,#4f46e5);--tg-accent-ink:var(--tollgate-accent-ink,#fff);--tg-warn:var(--tollgate-warn,#b54708);--tg-track:var(--tollgate-track,#eef0f6)}
@media (prefers-color-scheme:dark){:host{--tg-bg:var(--tollgate-bg,#171a23);--tg-ink:var(--tollgate-ink,#eef0f6);--tg-muted:var(--tollgate-muted,#a2a8ba);--tg-line:var(--tollgate-line,#2a2f3d);--tg-accent:var(--tollgate-accent,#818cf8);--tg-accent-ink:var(--tollgate-accent-ink,#0f1117);--tg-warn:var(--tollgate-warn,#fdb022);--tg-track:var(--tollgate-track,#262b38)}}
dialog{border:1px solid var(--tg-line);border-radius:16px;padding:0;width:min(440px,calc(100vw - 32px));background:var(--tg-bg);color:var(--tg-ink);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;box-shadow:0 24px 60px rgba(0,0,0,.25)}
dialog::backdrop{background:rgba(15,17,23,.55);backdrop-filter:blur(2px)}
.body{padding:24px 24px 8px;overflow-wrap:anywhere}h2{font-size:18px;margin:0 0 6px;display:flex;gap:10px;align-items:center}
.badge{display:inline-grid;place-items:center;width:32px;height:32px;border-radius:10px;background:color-mix(in srgb,var(--tg-warn) 16%,transparent);color:var(--tg-warn);font-weight:800;flex:none}
p{margin:0 0 12px;color:var(--tg-muted)}p.error{color:var(--tg-warn);font-weight:600}
dl{display:grid;grid-template-columns:1fr auto;gap:6px 16px;margin:14px 0}dt{color:var(--tg-muted)}dd{margin:0;font-weight:600;font-variant-numeric:tabular-nums;text-align:right}
.bar{height:10px;border-radius:99px;background:var(--tg-track);overflow:hidden;margin:6px 0 4px;display:flex}
.bar span{display:block;height:100%;background:var(--tg-accent)}.bar span.need{background:var(--tg-warn);opacity:.75}
.legend{font-size:13px;color:var(--tg-muted);display:flex;justify-content:space-between;gap:8px}
.note{font-size:13px}
.actions{display:flex;gap:10px;justify-content:flex-end;align-items:center;padding:12px 24px 20px;flex-wrap:wrap}
.actions a{margin-right:auto;padding:9px 0;color:var(--tg-accent);font-weight:600;text-decoration:none}.actions a:hover{text-decoration:underline}
@media (max-width:480px){.actions{flex-direction:column;align-items:stretch}.actions a{margin-right:0;text-align:center}}
button{font:inherit;font-weight:600;padding:9px 16px;border-radius:10px;border:1px solid var(--tg-line);background:transparent;color:inherit;cursor:pointer}
button.primary{background:var(--tg-accent);border-color:var(--tg-accent);color:var(--tg-accent-ink)}
button:focus-visible,a:focus-visible{outline:2px solid var(--tg-accent);outline-offset:2px}
button:disabled{opacity:.6;cursor:progress}
`;

const FOCUSABLE =
  'a[href],button:not([disabled]),input:not([disabled]),select,textarea,[tabindex]:not([tabindex="-1"])';

/** What a dialog element gets from {@link mountModal}. */
export interface Modal {
  dialog: HTMLDialogElement;
  open(): void;
  close(): void;
  isOpen(): boolean;
}

/** Every dialog {@link mountModal} built: focus inside one of them is not "outside the dialogs". */
const MODALS = new WeakSet<HTMLDialogElement>();
/** Where the focus last was outside every Tollgate dialog (see {@link mountModal}'s `open`). */
let lastFocusedOutside: HTMLElement | null = null;
let trackingFocus = false;

/**
 * Follows the focus with one listener for the page, however many dialogs are mounted: an app that mounts its
 * dialogs again and again (a component re-rendered) must not add a document listener each time, which the
 * document would keep, with each dialog, for the page's life.
 */
function trackFocusOutsideDialogs(): void {
  if (trackingFocus) return;
  trackingFocus = true;
  document.addEventListener(
    'focusin',
    (event) => {
      const path = event.composedPath();
      const target = path[0];
      if (!(target instanceof HTMLElement)) return;
      if (path.some((node) => node instanceof HTMLDialogElement && MODALS.has(node))) return;
      lastFocusedOutside = target;
    },
    true,
  );
}

/**
 * Builds the `<dialog>` in `root`, labelled by the element with id `title` and described by `description`.
 * `onClosed` runs after it closes, however it closed (Escape, a button, `close()`).
 */
export function mountModal(root: ShadowRoot, onClosed: () => void): Modal {
  // A constructed sheet is not inline style, so a page's strict Content-Security-Policy does not block it.
  if (
    'adoptedStyleSheets' in root &&
    typeof CSSStyleSheet !== 'undefined' &&
    'replaceSync' in CSSStyleSheet.prototype
  ) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(DIALOG_STYLE);
    root.adoptedStyleSheets = [sheet];
  } else {
    const style = document.createElement('style');
    style.textContent = DIALOG_STYLE;
    root.append(style);
  }
  const dialog = document.createElement('dialog');
  dialog.setAttribute('role', 'dialog');
  dialog.setAttribute('aria-modal', 'true');
  dialog.setAttribute('aria-labelledby', 'title');
  dialog.setAttribute('aria-describedby', 'description');
  root.append(dialog);
  let returnFocus: HTMLElement | null = null;
  // The control that opens the dialog has often lost the focus by then (an app disables its Send button while
  // the request is on its way, which drops the focus to the page): the focus goes back to where it last was
  // outside the dialogs, else it would stay on a hidden button, from where Tab leaves the page.
  MODALS.add(dialog);
  trackFocusOutsideDialogs();

  dialog.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      event.preventDefault();
      modal.close();
      return;
    }
    if (event.key !== 'Tab') return;
    // Tab and Shift+Tab cycle inside the dialog; the page behind is inert while it is open.
    const items = [...dialog.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => !el.hidden);
    if (items.length === 0) return;
    const first = items[0];
    const last = items[items.length - 1];
    const active = root.activeElement;
    if (event.shiftKey && (active === first || !dialog.contains(active))) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (active === last || !dialog.contains(active))) {
      event.preventDefault();
      first.focus();
    }
  });
  // The native cancel (Escape) goes through close() too, so focus always returns.
  dialog.addEventListener('cancel', (event) => {
    event.preventDefault();
    modal.close();
  });

  const modal: Modal = {
    dialog,
    open() {
      if (dialog.open) return;
      let active = document.activeElement as HTMLElement | null;
      while (active?.shadowRoot?.activeElement) active = active.shadowRoot.activeElement as HTMLElement;
      returnFocus = active && active !== document.body ? active : lastFocusedOutside;
      dialog.showModal();
      (dialog.querySelector<HTMLElement>('[autofocus]') ?? dialog.querySelector<HTMLElement>(FOCUSABLE))?.focus();
    },
    close() {
      if (!dialog.open) return;
      dialog.close();
      if (returnFocus?.isConnected) returnFocus.focus();
      // Nowhere to go back to (removed, or still disabled): at least no hidden button keeps the focus.
      (root.activeElement as HTMLElement | null)?.blur();
      returnFocus = null;
      onClosed();
    },
    isOpen: () => dialog.open,
  };
  return modal;
}

/**
 * Sets the widths of bar segments rendered as `data-width="<percent>"` (through the CSSOM, which a strict
 * Content-Security-Policy allows, unlike inline `style` attributes).
 */
export function applyBarWidths(container: ParentNode): void {
  for (const segment of container.querySelectorAll<HTMLElement>('[data-width]'))
    segment.style.width = `${segment.dataset.width}%`;
}

/** Escapes text for HTML. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}
