import { escapeHtml, mountModal, type Modal } from './dialog-base.ts';
import type { TollgateClient } from './client.ts';

/** The `<tollgate-signin-dialog>` element's own API. */
export interface SignInDialogElement extends HTMLElement {
  /** The client whose `signIn()` the Continue button calls (it only starts the OAuth redirect). */
  client: Pick<TollgateClient, 'signIn'> | null;
  /** The app's name, shown in the text (attribute `app-name`). */
  appName: string;
  show(): void;
  close(): void;
}

/** Defines `<tollgate-signin-dialog>` once (browser only). */
export function defineSignInDialog(): void {
  if (typeof customElements === 'undefined' || customElements.get('tollgate-signin-dialog')) return;

  class TollgateSignInDialog extends HTMLElement implements SignInDialogElement {
    static observedAttributes = ['app-name'];
    #modal: Modal;
    client: SignInDialogElement['client'] = null;
    appName = '';

    constructor() {
      super();
      this.#modal = mountModal(this.attachShadow({ mode: 'open' }), () =>
        this.dispatchEvent(new CustomEvent('tollgate-close', { bubbles: true, composed: true })),
      );
    }

    attributeChangedCallback(_name: string, _old: string | null, value: string | null) {
      this.appName = value ?? '';
    }

    show() {
      // The app's name, or "This app" opening the text and "this app" within it.
      const name = escapeHtml(this.appName || 'this app');
      const subject = escapeHtml(this.appName || 'This app');
      this.#modal.dialog.innerHTML = `
<div class="body">
<h2 id="title"><span class="badge" aria-hidden="true">T</span>Sign in with Tollgate</h2>
<p id="description">${subject} uses your Tollgate account for AI. You will go to Tollgate to sign in, choose what ${name} may do and set a daily spending limit for it. You can change that limit or revoke ${name} at any time.</p>
<p class="error" part="error" role="alert" hidden></p>
</div>
<div class="actions"><button type="button" data-action="close">Cancel</button><button type="button" class="primary" data-action="continue" autofocus>Continue with Tollgate</button></div>`;
      this.#modal.dialog.querySelector('[data-action=close]')!.addEventListener('click', () => this.close());
      if (!this.client) {
        // Continue would do nothing: say so to the developer, and show the user no dead button.
        console.error(
          '<tollgate-signin-dialog>: no client set; set its client property (createTollgateClient(…)) before show().',
        );
        const note = this.#modal.dialog.querySelector<HTMLElement>('[part=error]')!;
        note.textContent = 'Sign-in is not set up on this page yet.';
        note.hidden = false;
        this.#modal.dialog.querySelector('[data-action=continue]')!.remove();
        this.#modal.open();
        return;
      }
      const proceed = this.#modal.dialog.querySelector<HTMLButtonElement>('[data-action=continue]')!;
      const problem = this.#modal.dialog.querySelector<HTMLElement>('[part=error]')!;
      proceed.addEventListener('click', async () => {
        proceed.disabled = true;
        problem.hidden = true;
        this.dispatchEvent(new CustomEvent('tollgate-signin', { bubbles: true, composed: true }));
        // No REST call here (contract §1): signIn() only builds the authorize URL and navigates to it.
        try {
          await this.client?.signIn();
        } catch (error) {
          // It could not start (a plain-http page has no Web Crypto for PKCE, a navigation refused): say why and
          // let the user try again, rather than leave a dead, disabled button and the rejection in the console.
          problem.textContent = (error as Error)?.message || 'Sign-in could not start. Try again.';
          problem.hidden = false;
          proceed.disabled = false;
          proceed.focus();
        }
      });
      this.#modal.open();
    }

    close() {
      this.#modal.close();
    }
  }

  customElements.define('tollgate-signin-dialog', TollgateSignInDialog);
}
