import type { GatewayDeps } from '../../gateway/deps.ts';
import type { MessagesConfig } from './config.ts';

/** What the Messages API is built from: the gateway's pipeline, and its own section of the config. */
export interface MessagesDeps extends GatewayDeps {
  config: GatewayDeps['config'] & MessagesConfig;
}
