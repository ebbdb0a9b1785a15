import Type from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { InteractionDetails, Provider } from 'oidc-provider';
import type { App } from '../platform/http/server.ts';
import type { OAuthDeps } from './deps.ts';
import { SCOPES } from './scopes.ts';
import { escapeHtml, renderPage, STRICT_PAGE_CSP } from '../platform/http/page.ts';
import { creditsToMicros, microsToCredits, CREDITS_RULE } from '../platform/money.ts';
import { checkSignIn, throttleMessage } from '../accounts/sign-in-throttle.ts';
import { findUser } from '../accounts/users.ts';
import { NO_ACCOUNT_HINT, signUpOpen } from '../accounts/signup-closed.ts';
import { clientDisplay, clientName } from './clients.ts';
import { recordConsent } from './authorizations.ts';
import { interactionPath } from './provider.ts';
import { interactionOfEndedSession, restartUrl } from './browser-account.ts';
import { signInStep } from './sign-in-step.ts';

/** What each scope lets an app do, in the words the consent page uses. */
export const SCOPE_DESCRIPTIONS: Record<(typeof SCOPES)[number], string> = {
  read: 'See your profile: your name and email address.',
  write: 'Make changes to your account on your behalf.',
  'billing:read': 'See your credit balance and what your apps have spent.',
  'apikeys:read': 'See the API keys it created.',
  'apikeys:write': 'Create, change and revoke API keys for you.',
  'ai:chat': 'Use chat models, paid from your credits.',
  'ai:completions': 'Use text completion models, paid from your credits.',
  'ai:models': 'List the models you can use.',
  'ai:images': 'Generate images, paid from your credits.',
  'ai:embeddings': 'Create embeddings, paid from your credits.',
  'ai:audio': 'Transcribe and generate audio, paid from your credits.',
  offline_access: 'Keep this access when you are not using the app, until you revoke it.',
  openid: 'Know who you are: your Tollgate account id.',
  profile: 'See your name and profile picture.',
  email: 'See your email address.',
};

const Params = Type.Object({ uid: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }) });
const LoginBody = Type.Object({
  email: Type.Optional(Type.String({ maxLength: 320 })),
  password: Type.Optional(Type.String({ maxLength: 1024 })),
});
const ConsentBody = Type.Object({
  decision: Type.Optional(Type.String({ maxLength: 10 })),
  daily_limit: Type.Optional(Type.String({ maxLength: 40 })),
});
const CREDITS_TEXT = /^\d{1,12}(\.\d+)?$/;
/** What fails on these pages (a database outage, a malformed uid) is a page saying so, never JSON (error-page.ts). */
const PAGE = { envelope: 'page' } as const;

/**
 * The sign-in page of an authorization. `offerSignUp` (false while `SIGNUP=closed`) links to sign-up; without it
 * the page says to ask the operator for an account.
 */
function loginPage(uid: string, appName: string, offerSignUp: boolean, message?: string, email = ''): string {
  const noAccount = offerSignUp
    ? `New here? <a href="${escapeHtml(signUpUrl(uid))}">Create an account</a>`
    : escapeHtml(NO_ACCOUNT_HINT);
  return renderPage(
    'Sign in',
    `
<h1>Sign in</h1>
<p>to continue to <strong>${escapeHtml(appName)}</strong></p>
${message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : ''}
<form method="post" action="${interactionPath(escapeHtml(uid))}/login">
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="email" required value="${escapeHtml(email)}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="row"><button class="primary" type="submit">Sign in</button></div>
</form>
<p class="more">${noAccount}</p>`,
  );
}

/**
 * Where "Create an account" leads: the sign-up page, returning to this interaction's page once the account is
 * made (and the browser signed in to it), which then finishes the sign-in step and shows consent as usual.
 *
 * Security invariants: the return target is only this interaction's own path, and the sign-up form accepts no
 * other API path (accounts' formReturnTo), so the link cannot be bent into an open redirect; the sign-up is
 * the ordinary `/signup` form, with its cross-origin refusal (CSRF), its throttle and its answer that does not
 * tell whether an email has an account (a taken email signs nobody in, and the sign-in page shows again).
 * The interaction itself is found again only through its cookie: a return after it expired is the expired page.
 */
export function signUpUrl(uid: string): string {
  return `/signup?${new URLSearchParams({ return_to: interactionPath(uid) })}`;
}

/** What the consent page shows besides the form: who consents, to which app, and where the answer goes. */
interface ConsentView {
  appName: string;
  /** Registered by the operator; false for an app an ordinary user registered from the dashboard. */
  verified: boolean;
  /** The host of the redirect URI the answer is sent to. */
  redirectHost: string;
  /** The email of the account that consents. */
  accountEmail: string;
  scopes: string[];
}

/**
 * The consent page; `message` is a refusal of the daily limit, announced and tied to that field. Allow comes
 * first: it is the form's default button, the one Enter in the limit field presses (Deny first made typing a
 * limit and pressing Enter deny the app).
 */
function consentPage(uid: string, view: ConsentView, dailyLimit: string, message?: string): string {
  const { appName, scopes } = view;
  const items = scopes
    .map(
      (scope) =>
        `<li><code>${escapeHtml(scope)}</code>: ${escapeHtml(SCOPE_DESCRIPTIONS[scope as keyof typeof SCOPE_DESCRIPTIONS] ?? scope)}</li>`,
    )
    .join('');
  const unverified = view.verified
    ? ''
    : `<p class="error" role="note"><strong>Unverified app.</strong> A Tollgate user registered it, not the operator of this service; allow it only if you trust who made it.</p>`;
  return renderPage(
    `Allow ${appName}?`,
    `
<h1>Allow <strong>${escapeHtml(appName)}</strong> to use your account?</h1>
<p class="account">Signed in as <strong>${escapeHtml(view.accountEmail)}</strong>. Not you?</p>
<form method="post" class="switch" action="${interactionPath(escapeHtml(uid))}/switch"><button type="submit">Use another account</button></form>
${unverified}
<p>Your answer is sent to <strong>${escapeHtml(view.redirectHost)}</strong>.</p>
<p>${escapeHtml(appName)} will be able to:</p>
<ul class="scopes">${items || '<li>Nothing beyond knowing who you are.</li>'}</ul>
${message ? `<p class="error" role="alert" id="daily_limit_error">${escapeHtml(message)}</p>` : ''}
<form method="post" action="${interactionPath(escapeHtml(uid))}/consent">
<label for="daily_limit">Daily spending limit</label>
<input id="daily_limit" name="daily_limit" inputmode="decimal" placeholder="No limit" value="${escapeHtml(dailyLimit)}" ${message ? 'aria-invalid="true" aria-describedby="daily_limit_error daily_limit_hint"' : 'aria-describedby="daily_limit_hint"'}>
<p class="hint" id="daily_limit_hint">Credits this app may spend per day (resets at 00:00 UTC). Leave empty for no limit.</p>
<div class="row"><button class="primary" type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny">Deny</button></div>
</form>`,
  );
}

// The pages need nothing but their own stylesheet: no script, no inline style attribute (page.ts).
function sendPage(reply: FastifyReply, status: number, html: string) {
  return reply
    .code(status)
    .header('content-security-policy', STRICT_PAGE_CSP)
    .header('cache-control', 'no-store')
    .type('text/html')
    .send(html);
}

function errorPage(reply: FastifyReply, status: number, message: string) {
  return sendPage(
    reply,
    status,
    renderPage(
      'Authorization failed',
      `<h1>Authorization failed</h1><p class="error" role="alert">${escapeHtml(message)}</p><p class="hint">Go back to the app and start again.</p>`,
    ),
  );
}

/** Parses the daily limit field: empty is no limit, else credits with at most 6 decimals, as micro-credits. */
export function parseDailyLimit(text: string | undefined): { micros: number | null } | { error: string } {
  const trimmed = (text ?? '').trim();
  if (trimmed === '') return { micros: null };
  const micros = CREDITS_TEXT.test(trimmed) ? creditsToMicros(Number(trimmed)) : null;
  if (micros === null)
    return {
      error: `Enter the daily spending limit in credits, ${CREDITS_RULE}, or leave it empty for no limit.`,
    };
  return { micros };
}

/** The requested scopes that Tollgate knows, in the order the app listed them. */
function requestedScopes(details: InteractionDetails): string[] {
  const known = new Set<string>(SCOPES);
  return [...new Set(String(details.params.scope ?? '').split(' '))].filter((scope) => known.has(scope));
}

/**
 * The sign-in and consent pages of an authorization request (decisions.md "OAuth": fields **Email** and
 * **Password**, button **Sign in**; the consent page names the app and what each scope allows, has a
 * **Daily spending limit** field and **Allow** / **Deny**). oidc-provider keeps the request in an
 * interaction, found through its cookie; these routes only read it and report the user's answer.
 */
export function registerInteractionRoutes(app: App, ctx: OAuthDeps, getProvider: () => Promise<Provider>): void {
  /** The interaction this request belongs to, or null when the cookie is missing, expired or for another one. */
  async function interactionOf(
    request: FastifyRequest,
    reply: FastifyReply,
    uid: string,
  ): Promise<{ provider: Provider; details: InteractionDetails } | null> {
    const provider = await getProvider();
    try {
      const details = await provider.interactionDetails(request.raw, reply.raw);
      return details.uid === uid ? { provider, details } : null;
    } catch (error) {
      if ((error as Error)?.name === 'SessionNotFound') return null;
      throw error;
    }
  }

  const sessions = ctx.browserSessions;
  const offerSignUp = signUpOpen(ctx.config);

  /** What the consent page shows for this interaction and account. */
  async function consentView(details: InteractionDetails, accountId: string): Promise<ConsentView> {
    const app = await clientDisplay(ctx.db, details.params.client_id);
    const account = await findUser(ctx.db, accountId);
    return {
      appName: app?.name ?? 'this app',
      verified: app?.verified ?? false,
      redirectHost: URL.parse(String(details.params.redirect_uri ?? ''))?.host ?? 'the app',
      accountEmail: account?.email ?? accountId,
      scopes: requestedScopes(details),
    };
  }

  /**
   * Reports the user's answer to oidc-provider and sends the browser back to the authorization. `keepLogin`
   * carries along the sign-in that this authorization's own login step gave (the interaction's last submission,
   * kept server-side with it): the consent step needs it, or oidc-provider would find a `prompt=login` unanswered
   * and ask for the password again after consent.
   */
  async function finish(
    request: FastifyRequest,
    reply: FastifyReply,
    provider: Provider,
    result: Record<string, unknown>,
    { keepLogin = false } = {},
  ) {
    const returnTo = await provider.interactionResult(request.raw, reply.raw, result, {
      mergeWithLastSubmission: keepLogin,
    });
    // Back to the authorization endpoint by path, on the address the browser is at: the authorization
    // server's cookies are that address's. oidc-provider writes PUBLIC_BASE_URL's (endpoint-routes.ts), which a
    // browser at another name of this server (localhost for 127.0.0.1) has no cookies for; a path cannot send
    // it to another host or scheme either.
    const { pathname, search } = new URL(returnTo);
    return reply.redirect(pathname + search, 303);
  }

  const expired = 'This authorization request has expired or is not valid.';

  /**
   * Where the browser goes when a sign-up from interaction `uid`'s sign-in page ended the provider session the
   * interaction began with (the browser was signed in to another account): the interaction cannot go on, but
   * that sign-up still answers its sign-in step (sign-in-step.ts), so its authorization starts again. Null when
   * there is no such interaction or sign-up.
   */
  async function restartAfterSignUp(request: FastifyRequest, reply: FastifyReply, uid: string) {
    const ended = await interactionOfEndedSession(await getProvider(), request, reply, uid);
    if (ended?.prompt.name !== 'login') return null;
    const step = signInStep(ended, await sessions.signInOf(request), ctx.clock.now());
    return step.kind === 'restart' ? restartUrl(ended, ['login']) : null;
  }

  app.get(
    '/api/oauth/interaction/:uid',
    { schema: { hide: true, params: Params }, config: PAGE },
    async (request, reply) => {
      const { uid } = request.params as { uid: string };
      const found = await interactionOf(request, reply, uid);
      if (!found) {
        const restart = await restartAfterSignUp(request, reply, uid);
        return restart ? reply.redirect(restart, 303) : errorPage(reply, 400, expired);
      }
      const { provider, details } = found;
      const appName = (await clientName(ctx.db, details.params.client_id)) ?? 'this app';

      if (details.prompt.name === 'login') {
        // The browser's dashboard sign-in may answer this step (sign-in-step.ts keeps what it must meet). The
        // provider session is empty or already the same user's (endpoint-routes.ts ends a stale one before the
        // request gets here), unless the browser changed account during the interaction.
        const step = signInStep(details, await sessions.signInOf(request), ctx.clock.now());
        if (step.kind === 'finish')
          return finish(request, reply, provider, { login: { accountId: step.accountId, ts: step.ts } });
        if (step.kind === 'restart') return reply.redirect(restartUrl(details, ['login']), 303);
        return sendPage(reply, 200, loginPage(uid, appName, offerSignUp));
      }
      if (details.prompt.name === 'consent' && details.session?.accountId) {
        const previous = (await ctx.billing.appLimits(details.session.accountId, details.params.client_id)).daily;
        return sendPage(
          reply,
          200,
          consentPage(
            uid,
            await consentView(details, details.session.accountId),
            previous === null ? '' : String(microsToCredits(previous)),
          ),
        );
      }
      return errorPage(reply, 400, expired);
    },
  );

  app.post(
    '/api/oauth/interaction/:uid/login',
    { schema: { hide: true, params: Params, body: LoginBody }, config: PAGE },
    async (request, reply) => {
      const { uid } = request.params as { uid: string };
      const body = request.body as { email?: string; password?: string };
      const found = await interactionOf(request, reply, uid);
      if (!found || found.details.prompt.name !== 'login') return errorPage(reply, 400, expired);
      let user;
      try {
        user = await checkSignIn(ctx, request, reply, body.email ?? '', body.password ?? '');
      } catch (error) {
        const waitMessage = throttleMessage(error, reply);
        if (waitMessage === null) throw error;
        const appName = (await clientName(ctx.db, found.details.params.client_id)) ?? 'this app';
        return sendPage(reply, 429, loginPage(uid, appName, offerSignUp, waitMessage, body.email));
      }
      if (!user) {
        const appName = (await clientName(ctx.db, found.details.params.client_id)) ?? 'this app';
        return sendPage(
          reply,
          401,
          loginPage(uid, appName, offerSignUp, 'That email and password do not match.', body.email),
        );
      }
      // One account per browser: signing in here signs the browser in. When the provider session still holds
      // another account (a forced re-sign-in), it cannot take a new one mid-interaction, so the browser is
      // signed in afresh and the authorization starts again, its sign-in now done.
      const sessionAccount = found.details.session?.accountId;
      if (sessionAccount && sessionAccount !== user.id) {
        await sessions.signIn(request, reply, user.id);
        return reply.redirect(restartUrl(found.details, ['login', 'max_age']), 303);
      }
      await sessions.startDashboardSession(request, reply, user.id);
      // Dated now on oidc-provider's clock (the wall clock), as it would date it itself: consent carries this login
      // along (finish's keepLogin), and the ID token's auth_time stays when the password was given.
      const ts = Math.floor(Date.now() / 1000);
      return finish(request, reply, found.provider, { login: { accountId: user.id, ts } });
    },
  );

  // "Not you?": signs the browser out (dashboard and provider session) and starts the authorization again,
  // which then asks for a sign-in. A cross-site POST has no interaction cookie (SameSite=Lax), so it
  // cannot sign anyone out.
  app.post(
    '/api/oauth/interaction/:uid/switch',
    { schema: { hide: true, params: Params }, config: PAGE },
    async (request, reply) => {
      const { uid } = request.params as { uid: string };
      const found = await interactionOf(request, reply, uid);
      if (!found) return errorPage(reply, 400, expired);
      await sessions.signOut(request, reply);
      return reply.redirect(restartUrl(found.details), 303);
    },
  );

  app.post(
    '/api/oauth/interaction/:uid/consent',
    { schema: { hide: true, params: Params, body: ConsentBody }, config: PAGE },
    async (request, reply) => {
      const { uid } = request.params as { uid: string };
      const body = request.body as { decision?: string; daily_limit?: string };
      const found = await interactionOf(request, reply, uid);
      const accountId = found?.details.session?.accountId;
      if (!found || found.details.prompt.name !== 'consent' || !accountId) return errorPage(reply, 400, expired);
      const { provider, details } = found;
      const clientId: string = details.params.client_id;

      if (body.decision !== 'allow') {
        return finish(request, reply, provider, {
          error: 'access_denied',
          error_description: 'The user denied the request.',
        });
      }
      const limit = parseDailyLimit(body.daily_limit);
      if ('error' in limit) {
        return sendPage(
          reply,
          400,
          consentPage(uid, await consentView(details, accountId), body.daily_limit ?? '', limit.error),
        );
      }

      const grant =
        (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ??
        new provider.Grant({ accountId, clientId });
      const held = new Set(grant.getOIDCScope().split(' ').filter(Boolean));
      const missing: string[] = details.prompt.details.missingOIDCScope ?? [];
      const added = [...new Set([...missing, ...requestedScopes(details)])].filter((scope) => !held.has(scope));
      if (added.length) grant.addOIDCScope(added.join(' '));
      const grantId = await grant.save();
      // The grant is saved before the authorization row: if the row cannot be written, the interaction does
      // not finish, so no code is ever issued under a grant that billing does not know about.
      await recordConsent(
        ctx.db,
        ctx.clock,
        {
          userId: accountId,
          clientId,
          scopes: [...new Set(grant.getOIDCScope().split(' ').filter(Boolean))],
          dailyLimit: limit.micros,
        },
        ctx.billing,
      );
      return finish(request, reply, provider, { consent: { grantId } }, { keepLogin: true });
    },
  );
}
