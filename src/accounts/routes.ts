import Type from 'typebox';
import { UserSchema } from '#wire/user.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../platform/http/server.ts';
import { principalOf } from '../platform/http/server.ts';
import { sessionOfCookie } from '../platform/http/principal.ts';
import { resolveSession } from './sessions.ts';
import type { AccountsDeps } from './deps.ts';
import type { BrowserSessions } from './browser-sessions.ts';
import { escapeHtml, renderPage, safeReturnTo } from '../platform/http/page.ts';
import { ApiError, errors } from '../platform/errors.ts';
import { randomBytes } from 'node:crypto';
import { EMAIL_PATTERN, findUser, registerUser, signUpProblem } from './users.ts';
import { checkSignIn, throttleMessage } from './sign-in-throttle.ts';
import { NO_ACCOUNT_HINT, signUpClosed, signUpClosedPage, signUpOpen } from './signup-closed.ts';

const Credentials = Type.Object({
  email: Type.String({ pattern: EMAIL_PATTERN, maxLength: 320 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
});

/**
 * The routes a browser navigates to (the pages and their form posts): what fails there (a database outage, a
 * body too large) is an HTML page saying so, not the JSON envelope of their `/api/auth/*` twins (error-page.ts).
 */
const PAGE = { envelope: 'page' } as const;

/**
 * The one API path a sign-in or sign-up form may return to: the page of an OAuth interaction (the "Create an
 * account" link of the authorization's sign-in page, src/oauth/interaction-routes.ts), exactly, with no query.
 */
const INTERACTION_RETURN = /^\/api\/oauth\/interaction\/[A-Za-z0-9_-]{1,64}$/;

/**
 * Where a sign-in or sign-up form sends the browser once it is done; anything else is `/`.
 *
 * Security invariants kept here (no open redirect, no sign-in that lands on an endpoint that acts):
 * - the target is a path of this origin (safeReturnTo: one leading slash, printable ASCII, never `//host`,
 *   `/\host` or a scheme);
 * - a target under `/api` is refused unless it is exactly an OAuth interaction's page
 *   ({@link INTERACTION_RETURN}); the path is judged as the browser will ask for it (dot segments resolved,
 *   percent-escapes decoded, any case), so `/./api/…`, `/%61pi/…` or `/API/…` cannot slip past. An interaction
 *   page only shows the browser's own interaction (its cookie must name that uid), so a link to another
 *   one ends on the expired page, never in someone else's authorization.
 */
export function formReturnTo(value: unknown): string {
  const target = safeReturnTo(value);
  if (INTERACTION_RETURN.test(target)) return target;
  let path: string;
  try {
    path = decodeURIComponent(new URL(target, 'http://tollgate.invalid').pathname).toLowerCase();
  } catch {
    return '/';
  }
  return path === '/api' || path.startsWith('/api/') || path.startsWith('/api\\') ? '/' : target;
}

/** A refusal shown on the sign-in or sign-up page; `field` names the one input it is about, if any. */
interface FormProblem {
  message: string;
  field?: 'email' | 'password';
}

/** What a sign-in or sign-up page shows besides its fields. */
interface FormView {
  /** Where the form sends the browser once done (formReturnTo). */
  returnTo: string;
  /** Whether the sign-in page links to sign-up (false while `SIGNUP=closed`). */
  offerSignUp: boolean;
  problem?: FormProblem;
  /** What was typed before a refusal (never the password). */
  typed?: { email?: string; name?: string };
}

/**
 * The sign-in or sign-up page. After a refusal it keeps what was typed (never the password), announces the
 * message, and ties it to the field it is about (`aria-invalid`, `aria-describedby`).
 */
function authForm(kind: 'signin' | 'signup', { returnTo, offerSignUp, problem, typed = {} }: FormView): string {
  const signup = kind === 'signup';
  const other = signup
    ? `Have an account? <a href="/signin?return_to=${encodeURIComponent(returnTo)}">Sign in</a>`
    : offerSignUp
      ? `New here? <a href="/signup?return_to=${encodeURIComponent(returnTo)}">Create an account</a>`
      : escapeHtml(NO_ACCOUNT_HINT);
  const tie = (field: 'email' | 'password') =>
    problem?.field === field ? ' aria-invalid="true" aria-describedby="form_error"' : '';
  return renderPage(
    signup ? 'Create your account' : 'Sign in',
    `
<h1>${signup ? 'Create your account' : 'Sign in'}</h1>
<p>${signup ? 'One account for every model, with a wallet you control.' : 'Welcome back.'}</p>
${problem ? `<p class="error" role="alert" id="form_error">${escapeHtml(problem.message)}</p>` : ''}
<form method="post" action="/${kind}">
<input type="hidden" name="return_to" value="${escapeHtml(returnTo)}">
${signup ? `<label for="name">Name</label><input id="name" name="name" autocomplete="name" value="${escapeHtml(typed.name ?? '')}">` : ''}
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="email" required value="${escapeHtml(typed.email ?? '')}"${tie('email')}>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="${signup ? 'new-password' : 'current-password'}" required ${signup ? 'minlength="8"' : ''}${tie('password')}>
<div class="row"><button class="primary" type="submit">${signup ? 'Create account' : 'Sign in'}</button></div>
</form>
<p class="hint" style="margin-top:16px">${other}</p>`,
  );
}

/** Sign-up, sign-in and sign-out (pages and JSON for the dashboard), and `GET /api/user/me`. */
export function registerAccountRoutes(app: App, ctx: AccountsDeps, sessions: BrowserSessions): void {
  // One account per browser: every sign-in, sign-up and sign-out goes through the browser's sessions, which
  // also end the OAuth provider's session of the previous account (browser-sessions.ts).
  const signIn = (request: FastifyRequest, reply: FastifyReply, userId: string, signedUpFor?: string) =>
    sessions.signIn(request, reply, userId, signedUpFor);

  // SIGNUP=closed: only the operator creates accounts (POST /api/admin/users, `tollgate create-user`). The sign-up
  // routes refuse before reading the body, and no page offers sign-up.
  const open = signUpOpen(ctx.config);
  const refuseWhenClosed = async () => {
    if (!open) throw signUpClosed();
  };

  const pageQuery = Type.Object({ return_to: Type.Optional(Type.String()) });
  app.get('/signin', { schema: { hide: true, querystring: pageQuery }, config: PAGE }, async (request, reply) => {
    const returnTo = formReturnTo((request.query as any).return_to);
    return reply.type('text/html').send(authForm('signin', { returnTo, offerSignUp: open }));
  });
  app.get('/signup', { schema: { hide: true, querystring: pageQuery }, config: PAGE }, async (request, reply) => {
    const returnTo = formReturnTo((request.query as any).return_to);
    const page = open ? authForm('signup', { returnTo, offerSignUp: open }) : signUpClosedPage(returnTo);
    return reply.type('text/html').send(page);
  });

  app.post('/signup', { schema: { hide: true }, config: PAGE }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, string>;
    const returnTo = formReturnTo(body.return_to);
    if (!open) return reply.code(403).type('text/html').send(signUpClosedPage(returnTo));
    const input = { email: String(body.email ?? ''), name: body.name, password: String(body.password ?? '') };
    try {
      // Security invariant: the answer does not tell whether the email already has an account (see registerUser).
      const { user, created } = await registerUser(ctx.db, ctx.clock, input);
      // The session remembers where this sign-up returns: an app's authorization takes it as its sign-in
      // (oauth/sign-in-step.ts), its prompt=login included.
      if (created) await signIn(request, reply, user.id, returnTo);
      return reply.redirect(returnTo, 303);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      return reply
        .code(error.status)
        .type('text/html')
        .send(
          authForm('signup', {
            returnTo,
            offerSignUp: open,
            problem: { message: error.message, field: signUpProblem(input)?.field },
            typed: { email: input.email, name: String(body.name ?? '') },
          }),
        );
    }
  });

  app.post('/signin', { schema: { hide: true }, config: PAGE }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, string>;
    const returnTo = formReturnTo(body.return_to);
    let user;
    try {
      user = await checkSignIn(ctx, request, reply, String(body.email ?? ''), String(body.password ?? ''));
    } catch (error) {
      const waitMessage = throttleMessage(error, reply);
      if (waitMessage === null) throw error;
      return reply.type('text/html').send(
        authForm('signin', {
          returnTo,
          offerSignUp: open,
          problem: { message: waitMessage },
          typed: { email: String(body.email ?? '') },
        }),
      );
    }
    if (!user)
      return reply
        .code(401)
        .type('text/html')
        .send(
          authForm('signin', {
            returnTo,
            offerSignUp: open,
            problem: { message: 'That email and password do not match.' },
            typed: { email: String(body.email ?? '') },
          }),
        );
    await signIn(request, reply, user.id);
    return reply.redirect(returnTo, 303);
  });

  app.post('/signout', { schema: { hide: true }, config: PAGE }, async (request, reply) => {
    await sessions.signOut(request, reply);
    return reply.redirect('/signin', 303);
  });

  const SessionResponse = Type.Object({ user: UserSchema, csrfToken: Type.String() });

  app.post(
    '/api/auth/signup',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Create an account and start a dashboard session',
        description: 'Refused with 403 `SIGNUP_CLOSED` when the operator closed sign-up (`SIGNUP=closed`).',
        body: Type.Intersect([Credentials, Type.Object({ name: Type.Optional(Type.String({ maxLength: 200 })) })]),
        response: { 201: SessionResponse },
      },
      preValidation: refuseWhenClosed,
    },
    async (request, reply) => {
      // Security invariant: a taken email gets the same status and shape as a new account (a made-up user and
      // CSRF token, no session), so sign-up cannot be used to find out who has an account.
      const { user, created } = await registerUser(ctx.db, ctx.clock, request.body as any);
      const csrfToken = created
        ? (await signIn(request, reply, user.id)).csrfToken
        : randomBytes(24).toString('base64url');
      return reply.code(201).send({ user, csrfToken });
    },
  );

  app.post(
    '/api/auth/signin',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Start a dashboard session',
        body: Credentials,
        response: { 200: SessionResponse },
      },
    },
    async (request, reply) => {
      const { email, password } = request.body as { email: string; password: string };
      const user = await checkSignIn(ctx, request, reply, email, password);
      if (!user) throw errors.unauthenticated('That email and password do not match.');
      const session = await signIn(request, reply, user.id);
      return { user, csrfToken: session.csrfToken };
    },
  );

  app.post(
    '/api/auth/signout',
    {
      schema: {
        tags: ['accounts'],
        summary: 'End the dashboard session',
        response: { 200: Type.Object({ success: Type.Literal(true) }) },
      },
      config: { auth: [] },
    },
    async (request, reply) => {
      await sessions.signOut(request, reply);
      return { success: true } as const;
    },
  );

  // No `config.auth`: a signed-out browser is an answer here, not a 401 (which Chromium logs as a console error on
  // every signed-out visit to the dashboard).
  app.get(
    '/api/auth/state',
    {
      schema: {
        tags: ['accounts'],
        summary:
          'Whether this browser is signed in to the dashboard: if so its user and the CSRF token writes must send',
        response: {
          200: Type.Object({
            signedIn: Type.Boolean(),
            user: Type.Optional(UserSchema),
            csrfToken: Type.Optional(Type.String({ description: 'Given with the user, when signed in' })),
            signUp: Type.Union([Type.Literal('open'), Type.Literal('closed')], {
              description: 'Whether anyone may create an account here (`SIGNUP`), so the dashboard offers it or not',
            }),
          }),
        },
      },
    },
    async (request) => {
      const principal = await sessionOfCookie(request, (token) => resolveSession(ctx.db, ctx.clock, token));
      const user = principal ? await findUser(ctx.db, principal.userId) : null;
      const signUp = ctx.config.SIGNUP;
      return user
        ? { signedIn: true as const, user, csrfToken: principal!.csrfToken!, signUp }
        : { signedIn: false as const, signUp };
    },
  );

  app.get(
    '/api/auth/session',
    {
      schema: {
        tags: ['accounts'],
        summary: 'The dashboard session: the user and the CSRF token writes must send',
        response: { 200: SessionResponse },
      },
      config: { auth: [] },
    },
    async (request) => {
      const principal = principalOf(request);
      if (principal.kind !== 'session') throw errors.forbidden('Only a dashboard session has a session.');
      const user = await findUser(ctx.db, principal.userId);
      if (!user) throw errors.unauthenticated();
      return { user, csrfToken: principal.csrfToken! };
    },
  );

  app.get(
    '/api/user/me',
    {
      schema: {
        tags: ['user'],
        summary: 'The signed-in user',
        security: [{ bearer: [] }],
        response: { 200: UserSchema },
      },
      config: { auth: ['read'] },
    },
    async (request) => {
      const user = await findUser(ctx.db, principalOf(request).userId);
      if (!user) throw errors.unauthenticated();
      return user;
    },
  );
}
