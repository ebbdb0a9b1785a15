/**
 * Echo Chat: a third-party app that lets its users pay for AI from their own Tollgate wallet. It uses
 * nothing of Tollgate but the public SDK and its own OAuth client, exactly as an outside app would.
 */
import './style.css';
import {
  createTollgateClient,
  defineTollgateElements,
  formatCredits,
  TollgateRestrictionError,
  type ChatMessage,
  type RestrictionDialogElement,
  type SignInDialogElement,
  type TollgateClient,
} from '@tollgate/sdk';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const SCOPES = ['read', 'billing:read', 'ai:chat', 'offline_access'];

/** Which OAuth client this page is: `?client_id=` (kept for the redirect), else the gateway's built-in demo client. */
async function loadClient(): Promise<TollgateClient> {
  const config = (await (await fetch('./config.json')).json()) as {
    clientId: string;
    baseUrl: string;
    redirectUri: string;
  };
  // The sign-in comes back to the redirect URI (PUBLIC_BASE_URL's /demo/), whose page must hold the state this
  // one keeps: opened at another name of the gateway (localhost for 127.0.0.1), move there first.
  const home = new URL(config.redirectUri);
  if (location.origin !== home.origin) {
    location.replace(home.origin + location.pathname + location.search);
    return new Promise(() => {});
  }
  const fromUrl = new URLSearchParams(location.search).get('client_id');
  if (fromUrl) sessionStorage.setItem('echo-chat:client_id', fromUrl);
  const clientId = fromUrl ?? sessionStorage.getItem('echo-chat:client_id') ?? config.clientId;
  return createTollgateClient({ baseUrl: config.baseUrl, clientId, redirectUri: config.redirectUri, scopes: SCOPES });
}

function addMessage(role: string, text: string, meta?: string): HTMLLIElement {
  const item = document.createElement('li');
  item.className = role;
  item.textContent = text;
  if (meta) {
    const small = document.createElement('span');
    small.className = 'meta';
    small.textContent = meta;
    item.append(small);
  }
  $('log').append(item);
  item.scrollIntoView({ block: 'end' });
  return item;
}

async function main() {
  defineTollgateElements();
  const client = await loadClient();
  const signInDialog = document.querySelector('tollgate-signin-dialog') as SignInDialogElement;
  const restrictionDialog = document.querySelector('tollgate-restriction-dialog') as RestrictionDialogElement;
  signInDialog.client = client;
  restrictionDialog.appId = client.clientId;
  restrictionDialog.gatewayUrl = client.baseUrl;
  restrictionDialog.getToken = () => client.getAccessToken();

  try {
    if (await client.handleRedirect()) history.replaceState(null, '', location.pathname);
  } catch (error) {
    history.replaceState(null, '', location.pathname);
    $('status').textContent = `Sign-in did not finish: ${(error as Error).message}`;
  }

  $('sign-in').addEventListener('click', () => signInDialog.show());
  $('sign-out').addEventListener('click', async () => {
    await client.signOut();
    location.reload();
  });

  if (!client.isSignedIn()) {
    $('welcome').hidden = false;
    return;
  }

  const history_: ChatMessage[] = [];
  const refreshAccount = async () => {
    const [user, balance] = await Promise.all([client.getUser(), client.getBalance().catch(() => null)]);
    $('who').textContent = user.email;
    $('balance').textContent = balance ? `${formatCredits(balance.available)} credits` : '';
    $('balance').hidden = !balance;
  };
  $('account').hidden = false;
  $('chat').hidden = false;
  addMessage('hint', 'Signed in. Every message is paid from your Tollgate wallet.');
  await refreshAccount().catch((error) => ($('status').textContent = (error as Error).message));

  let pending: string | null = null;

  async function send(text: string) {
    const error = $('chat-error');
    error.hidden = true;
    $<HTMLButtonElement>('send').disabled = true;
    const messages = [...history_, { role: 'user', content: text }];
    const request = { model: $<HTMLSelectElement>('model').value, messages };
    try {
      let reply = '';
      if ($<HTMLInputElement>('stream').checked) {
        let bubble: HTMLLIElement | null = null;
        for await (const delta of client.chatStream(request)) {
          reply += delta;
          bubble ??= addMessage('assistant', '');
          bubble.textContent = reply;
        }
        if (!bubble) addMessage('assistant', reply);
      } else {
        const completion = await client.chat(request);
        reply = completion.choices[0]?.message.content ?? '';
        addMessage('assistant', reply);
      }
      history_.push({ role: 'user', content: text }, { role: 'assistant', content: reply });
      pending = null;
      void refreshAccount().catch(() => {});
    } catch (failure) {
      if (
        failure instanceof TollgateRestrictionError &&
        (failure as TollgateRestrictionError).restriction.kind !== 'other'
      ) {
        // A limit or the wallet stopped this message: the dialog explains, and Retry sends it again.
        pending = text;
        restrictionDialog.error = failure;
      } else if (!client.isSignedIn()) {
        // The sign-in ended (the app revoked in the dashboard, its refresh token refused; the SDK dropped the
        // tokens): a chat that can only fail again gives way to the sign-in.
        $('chat').hidden = true;
        $('account').hidden = true;
        $('welcome').hidden = false;
        $('status').textContent =
          'Your Tollgate sign-in has ended: the app was revoked or its access expired. Sign in again to go on.';
      } else {
        error.textContent = (failure as Error).message;
        error.hidden = false;
      }
    } finally {
      $<HTMLButtonElement>('send').disabled = false;
    }
  }

  restrictionDialog.addEventListener('tollgate-retry', () => {
    if (pending) void send(pending);
  });

  $('composer').addEventListener('submit', (event) => {
    event.preventDefault();
    const input = $<HTMLInputElement>('message');
    const text = input.value.trim();
    if (!text) return;
    input.value = '';
    addMessage('user', text);
    void send(text);
  });
  $('message').focus();
}

main().catch((error) => ($('status').textContent = `Could not start: ${(error as Error).message}`));
