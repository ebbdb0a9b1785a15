import Type, { type Static } from 'typebox';

/** A user as the API shows it (`GET /api/user/me`, `POST /api/admin/users`). */
export const UserSchema = Type.Object({
  id: Type.String({ examples: ['usr_3kT9xQ2mN7pR4sV8wY1z'] }),
  email: Type.String(),
  name: Type.String(),
  image: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
});

/** A user as the API shows it. */
export type User = Static<typeof UserSchema>;
