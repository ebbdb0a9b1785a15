/**
 * @tollgate/wire: what goes over the wire between the gateway and its clients, declared once. The server
 * uses the TypeBox schemas (route validation, serialization, the OpenAPI document); the SDK and the dashboard
 * import only the static types (`import type`), so their bundles carry none of it.
 */
export * from './errors.ts';
export * from './restrictions.ts';
export * from './user.ts';
export * from './wallet.ts';
export * from './authorized-apps.ts';
export * from './keys.ts';
export * from './usage.ts';
export * from './topups.ts';
