import Type from 'typebox';
import { UserSchema } from '#wire/user.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../platform/http/server.ts';
import { principalOf } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { escapeHtml, renderPage, safeReturnTo } from '../platform/http/page.ts';
import { ApiError, errors } from '../platform/errors.ts';
import { randomBytes } from 'node:crypto';
import { EMAIL_PATTERN, findUser, registerUser } from './users.ts';
import { checkSignIn, throttleMessage } from './sign-in-throttle.ts';

const Credentials = Type.Object({
  email: Type.String({ pattern: EMAIL_PATTERN, maxLength: 320 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
});

function authForm(kind: 'signin' | 'signup', returnTo: string, message?: string, email = ''): string {
  const signup = kind === 'signup';
  return renderPage(
    signup ? 'Create your account' : 'Sign in',
    `
<h1>${signup ? 'Create your account' : 'Sign in'}</h1>
<p>${signup ? 'One account for every model, with a wallet you control.' : 'Welcome back.'}</p>
${message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : ''}
<form method="post" action="/${kind}">
<input type="hidden" name="return_to" value="${escapeHtml(returnTo)}">
${signup ? '<label for="name">Name</label><input id="name" name="name" autocomplete="name">' : ''}
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="email" required value="${escapeHtml(email)}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="${signup ? 'new-password' : 'current-password'}" required ${signup ? 'minlength="8"' : ''}>
<div class="row"><button class="primary" type="submit">${signup ? 'Create account' : 'Sign in'}</button></div>
</form>
<p class="hint" style="margin-top:16px">${signup ? `Have an account? <a href="/signin?return_to=${encodeURIComponent(returnTo)}">Sign in</a>` : `New here? <a href="/signup?return_to=${encodeURIComponent(returnTo)}">Create an account</a>`}</p>`,
  );
}

/** Sign-up, sign-in and sign-out (pages and JSON for the dashboard), and `GET /api/user/me`. */
export function registerAccountRoutes(app: App, ctx: AppContext): void {
  // One account per browser: every sign-in, sign-up and sign-out goes through the browser's sessions, which
  // also end the OAuth provider's session of the previous account (browser-sessions.ts).
  const sessions = ctx.services.browserSessions;
  const signIn = (request: FastifyRequest, reply: FastifyReply, userId: string) =>
    sessions.signIn(request, reply, userId);

  const pageQuery = Type.Object({ return_to: Type.Optional(Type.String()) });
  for (const kind of ['signin', 'signup'] as const) {
    app.get(`/${kind}`, { schema: { hide: true, querystring: pageQuery } }, async (request, reply) =>
      reply.type('text/html').send(authForm(kind, safeReturnTo((request.query as any).return_to))),
    );
  }

  app.post('/signup', { schema: { hide: true } }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, string>;
    const returnTo = safeReturnTo(body.return_to);
    try {
      // Security invariant: the answer does not tell whether the email already has an account (see registerUser).
      const { user, created } = await registerUser(ctx.db, ctx.clock, {
        email: String(body.email ?? ''),
        name: body.name,
        password: String(body.password ?? ''),
      });
      if (created) await signIn(request, reply, user.id);
      return reply.redirect(returnTo, 303);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      return reply
        .code(error.status)
        .type('text/html')
        .send(authForm('signup', returnTo, error.message, String(body.email ?? '')));
    }
  });

  app.post('/signin', { schema: { hide: true } }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, string>;
    const returnTo = safeReturnTo(body.return_to);
    let user;
    try {
      user = await checkSignIn(ctx, request.ip, String(body.email ?? ''), String(body.password ?? ''));
    } catch (error) {
      const waitMessage = throttleMessage(error, reply);
      if (waitMessage === null) throw error;
      return reply.type('text/html').send(authForm('signin', returnTo, waitMessage, String(body.email ?? '')));
    }
    if (!user)
      return reply
        .code(401)
        .type('text/html')
        .send(authForm('signin', returnTo, 'That email and password do not match.', String(body.email ?? '')));
    await signIn(request, reply, user.id);
    return reply.redirect(returnTo, 303);
  });

  app.post('/signout', { schema: { hide: true } }, async (request, reply) => {
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
        body: Type.Intersect([Credentials, Type.Object({ name: Type.Optional(Type.String({ maxLength: 200 })) })]),
        response: { 201: SessionResponse },
      },
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
      const user = await checkSignIn(ctx, request.ip, email, password);
      if (!user) throw errors.unauthenticated('That email and password do not match.');
      const session = await signIn(request, reply, user.id);
      return { user, csrfToken: session.csrfToken };
    },
  );

  app.post(
    '/api/auth/signout',
    { schema: { tags: ['accounts'], summary: 'End the dashboard session' }, config: { auth: [] } },
    async (request, reply) => {
      await sessions.signOut(request, reply);
      return { success: true };
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
