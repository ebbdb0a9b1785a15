import type { GatewayDeps } from '../../gateway/deps.ts';
import type { ResponsesConfig } from './config.ts';

/** What the Responses API is built from: the gateway's pipeline, and its own section of the config. */
export interface ResponsesDeps extends GatewayDeps {
  config: GatewayDeps['config'] & ResponsesConfig;
}
