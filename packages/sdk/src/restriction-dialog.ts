import { classifyResponse, TollgateRestrictionError, type Restriction } from './errors.ts';
import { applyBarWidths, escapeHtml, mountModal, type Modal } from './dialog-base.ts';
import { formatCredits, percentOf, resetsIn } from './format.ts';
import type { AuthorizedApp, TollgateBalance, TollgateUser } from './types.ts';

/** Anything the dialog accepts as its `error`: the SDK's error, its `restriction`, or a raw `{ error: {…} }` body. */
export type RestrictionInput = TollgateRestrictionError | Restriction | { error: unknown } | null | undefined;

/** The `<tollgate-restriction-dialog>` element's own API (besides HTMLElement's). */
export interface RestrictionDialogElement extends HTMLElement {
  /** Setting an error opens the dialog and loads the user's data; null closes it. */
  error: RestrictionInput;
  /** The app's OAuth client_id, matched in `/api/user/authorized-apps` (attribute `app-id`). */
  appId: string;
  /** The gateway's address (attribute `gateway-url`). */
  gatewayUrl: string;
  /** Returns the bearer token the reads use (the app's access token). */
  getToken: (() => string | null | Promise<string | null>) | null;
  /** Called when the user presses Retry (the `tollgate-retry` event fires too). */
  onretry: ((restriction: Restriction) => void) | null;
  close(): void;
  /** What the reads returned, once loaded (for apps that want to show more). */
  readonly data: { user?: TollgateUser; balance?: TollgateBalance; app?: AuthorizedApp };
}

/** Normalises whatever the app hands the dialog into a typed restriction. */
export function toRestriction(input: RestrictionInput): Restriction | null {
  if (!input) return null;
  if (input instanceof TollgateRestrictionError) return input.restriction;
  if ('kind' in input && 'code' in input) return input as Restriction;
  if ('error' in input) {
    const classified = classifyResponse(400, JSON.stringify(input));
    return classified instanceof TollgateRestrictionError ? classified.restriction : null;
  }
  return null;
}

function titleOf(restriction: Restriction): string {
  if (restriction.kind === 'spending_limit') {
    const period =
      restriction.limitType === 'total'
        ? 'Spending'
        : `${restriction.limitType[0].toUpperCase()}${restriction.limitType.slice(1)} spending`;
    return restriction.requested > restriction.limit
      ? `${period} limit too low for this request`
      : `${period} limit reached`;
  }
  if (restriction.kind === 'insufficient_credits') return 'Not enough credits';
  return 'Request refused';
}

/**
 * What a spending limit's refusal asks of the user. A request whose worst case alone is more than the whole limit
 * is refused after the reset too (only a higher limit lets it through), and a limit not yet reached is not
 * "reached": this request would go over it.
 */
function spendingLimitText(
  restriction: Restriction & { kind: 'spending_limit' },
  period: string,
  appName: string,
  appInText: string,
): string {
  if (restriction.requested > restriction.limit)
    return (
      `This request needs up to ${formatCredits(restriction.requested)} credits, more than the whole ${period} limit ` +
      `of ${formatCredits(restriction.limit)} credits you set for ${appInText}: ` +
      `${period === 'total' ? 'it is refused' : 'it is refused after the reset too'}. Raise the limit to send it.`
    );
  if (restriction.current >= restriction.limit)
    return `${appName} has reached the ${period} spending limit you set for it.`;
  return `This request would take ${appInText} over the ${period} spending limit you set for it.`;
}

/** Defines `<tollgate-restriction-dialog>` once (browser only). */
export function defineRestrictionDialog(): void {
  if (typeof customElements === 'undefined' || customElements.get('tollgate-restriction-dialog')) return;

  class TollgateRestrictionDialog extends HTMLElement implements RestrictionDialogElement {
    static observedAttributes = ['app-id', 'gateway-url'];
    #restriction: Restriction | null = null;
    #input: RestrictionInput = null;
    #modal: Modal;
    #loaded: { user?: TollgateUser; balance?: TollgateBalance; app?: AuthorizedApp } = {};
    #generation = 0;
    appId = '';
    gatewayUrl = '';
    getToken: RestrictionDialogElement['getToken'] = null;
    onretry: RestrictionDialogElement['onretry'] = null;

    constructor() {
      super();
      const root = this.attachShadow({ mode: 'open' });
      this.#modal = mountModal(root, () =>
        this.dispatchEvent(new CustomEvent('tollgate-close', { bubbles: true, composed: true })),
      );
    }

    attributeChangedCallback(name: string, _old: string | null, value: string | null) {
      if (name === 'app-id') this.appId = value ?? '';
      if (name === 'gateway-url') this.gatewayUrl = value ?? '';
    }

    get data() {
      return this.#loaded;
    }

    get error(): RestrictionInput {
      return this.#input;
    }

    set error(value: RestrictionInput) {
      this.#input = value;
      this.#restriction = toRestriction(value);
      if (!this.#restriction) {
        this.#modal.close();
        return;
      }
      this.#loaded = {};
      // Without the gateway's address the links would lead to the embedding app's own site (its 404s).
      if (!this.gatewayUrl)
        console.error(
          '<tollgate-restriction-dialog>: no gateway-url attribute (or gatewayUrl property); its top-up and limit links are left out.',
        );
      this.#render();
      this.#modal.open();
      void this.#load();
    }

    close() {
      this.#modal.close();
    }

    async #load() {
      const generation = ++this.#generation;
      // A token that cannot be had (its refresh failed, offline) leaves the reads out, as a failed read does.
      const token = await Promise.resolve()
        .then(() => this.getToken?.())
        .catch(() => null);
      const base = (this.gatewayUrl || '').replace(/\/+$/, '');
      if (!token) return;
      const read = async <T>(path: string): Promise<T | undefined> => {
        try {
          const response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
          return response.ok ? ((await response.json()) as T) : undefined;
        } catch {
          return undefined;
        }
      };
      // The three reads of contract §4.5, with the app's own token; any that fails leaves its part out.
      const [user, balance, apps] = await Promise.all([
        read<TollgateUser>('/api/user/me'),
        read<TollgateBalance>('/api/wallet/balance'),
        read<{ apps: AuthorizedApp[] }>('/api/user/authorized-apps'),
      ]);
      if (generation !== this.#generation) return;
      this.#loaded = { user, balance, app: apps?.apps?.find((app) => app.clientId === this.appId) };
      this.#render();
    }

    #render() {
      const restriction = this.#restriction;
      if (!restriction) return;
      const { user, balance, app } = this.#loaded;
      const base = (this.gatewayUrl || '').replace(/\/+$/, '');
      const appName = app?.name ?? 'This app';
      // The app's name, or "this app" within a sentence.
      const appInText = app?.name ?? 'this app';
      let content = '';
      let link = '';
      if (restriction.kind === 'spending_limit') {
        const used = percentOf(restriction.current, restriction.limit);
        const needed = Math.min(100 - used, percentOf(restriction.requested, restriction.limit));
        const reset = resetsIn(restriction.resetsAt);
        const period = restriction.limitType === 'total' ? 'total' : restriction.limitType;
        const current = app?.limits?.[restriction.limitType as keyof AuthorizedApp['limits']];
        content = `
<p id="description">${escapeHtml(spendingLimitText(restriction, period, appName, appInText))}</p>
<div class="bar" role="img" aria-label="${escapeHtml(`${formatCredits(restriction.current)} of ${formatCredits(restriction.limit)} credits used; this request needs ${formatCredits(restriction.requested)} more`)}"><span data-width="${used}"></span><span class="need" data-width="${needed}"></span></div>
<div class="legend"><span>Used ${formatCredits(restriction.current)}</span><span>Limit ${formatCredits(restriction.limit)}</span></div>
<dl>
<dt>Limit (${escapeHtml(period)})</dt><dd part="limit">${formatCredits(restriction.limit)} credits</dd>
<dt>Used</dt><dd part="used">${formatCredits(restriction.current)} credits</dd>
<dt>This request needs</dt><dd part="requested">${formatCredits(restriction.requested)} credits</dd>
${reset ? `<dt>Period</dt><dd part="resets">${escapeHtml(reset)}</dd>` : ''}
${balance ? `<dt>Wallet available</dt><dd part="wallet">${formatCredits(balance.available)} credits</dd>` : ''}
</dl>
${current && current.limit !== restriction.limit ? `<p class="note" part="limit-now">Your ${escapeHtml(period)} limit for ${escapeHtml(appName)} is now ${formatCredits(current.limit)} credits. Try again.</p>` : ''}`;
        link = `<a part="manage-link" href="${escapeHtml(`${base}/#/apps`)}" target="_blank" rel="noopener">Change this limit</a>`;
      } else if (restriction.kind === 'insufficient_credits') {
        content = `
<p id="description">Your Tollgate wallet does not hold enough credits for this request.</p>
<div class="bar" role="img" aria-label="${escapeHtml(`${formatCredits(restriction.available)} of the ${formatCredits(restriction.required)} credits needed are available`)}"><span data-width="${percentOf(restriction.available, restriction.required)}"></span></div>
<dl>
<dt>Available</dt><dd part="available">${formatCredits(restriction.available)} credits</dd>
<dt>This request needs</dt><dd part="required">${formatCredits(restriction.required)} credits</dd>
${balance && balance.available !== restriction.available ? `<dt>Available now</dt><dd part="available-now">${formatCredits(balance.available)} credits</dd>` : ''}
${restriction.owed ? `<dt>Owed</dt><dd part="owed">${formatCredits(restriction.owed)} credits</dd>` : ''}
</dl>`;
        // The top-up page opens with the credits still missing: a debt is repaid whole, whatever is available.
        // In micro-credits, as the wallet counts: 1 - 0.7 in floating point is 0.30000000000000004, which the
        // wallet page would round up to a cent more than is missing.
        const needed =
          restriction.owed ??
          Math.max(0, Math.round(restriction.required * 1e6) - Math.round(restriction.available * 1e6)) / 1e6;
        link = `<a part="add-credits" href="${escapeHtml(`${base}/#/wallet?need=${needed}`)}" target="_blank" rel="noopener">Add credits</a>`;
      } else {
        content = `<p id="description">${escapeHtml(restriction.message)}</p>`;
      }
      // No address, no link: a relative one would lead to a page of the embedding app's own site.
      if (link && !base)
        link = `<p class="error" part="setup-error">This app has not set the Tollgate address: open your Tollgate dashboard to ${restriction.kind === 'spending_limit' ? 'change this limit' : 'add credits'}.</p>`;
      // Re-rendering (once the reads arrive) must not drop the keyboard focus: every focusable element of the
      // dialog (its links and buttons) has a `part`, which the focus is given back by.
      const focused = this.shadowRoot?.activeElement?.getAttribute('part');
      this.#modal.dialog.innerHTML = `
<div class="body">
<h2 id="title"><span class="badge" aria-hidden="true">!</span>${escapeHtml(titleOf(restriction))}</h2>
${content}
${user ? `<p class="note">Signed in to Tollgate as ${escapeHtml(user.email)}</p>` : ''}
</div>
<div class="actions">${link}<button type="button" part="close" data-action="close">Close</button><button type="button" class="primary" part="retry" data-action="retry" autofocus>Retry</button></div>`;
      applyBarWidths(this.#modal.dialog);
      if (focused && this.#modal.isOpen())
        this.#modal.dialog.querySelector<HTMLElement>(`[part="${CSS.escape(focused)}"]`)?.focus();
      this.#modal.dialog.querySelector('[data-action=close]')!.addEventListener('click', () => this.close());
      this.#modal.dialog.querySelector('[data-action=retry]')!.addEventListener('click', () => {
        this.close();
        this.onretry?.(restriction);
        this.dispatchEvent(
          new CustomEvent('tollgate-retry', { detail: { restriction }, bubbles: true, composed: true }),
        );
      });
    }
  }

  customElements.define('tollgate-restriction-dialog', TollgateRestrictionDialog);
}
