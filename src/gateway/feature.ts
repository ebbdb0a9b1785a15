import multipart from '@fastify/multipart';
import type { Feature } from '../platform/feature.ts';
import type { App } from '../platform/http/server.ts';
import type { GatewayDeps } from './deps.ts';
import { registerEmbeddingsRoute } from './embeddings.ts';
import { registerImagesRoute } from './images.ts';
import { registerTranscriptionRoute, registerTranslationRoute } from './audio.ts';
import { registerImageEditsRoute } from './image-edits.ts';
import { registerSpeechRoute } from './speech.ts';
import { registerRealtimeRoute } from './realtime.ts';
import { registerRealtimeClientSecretRoute } from './realtime-client-secrets.ts';

/**
 * The AI API under `/api/v1`: embeddings, images (generations and edits), audio and realtime sessions, each behind
 * its permission, each billed by a hold for its worst case and a settle for what it used. (`GET /api/v1/models`
 * belongs to the models feature; predictions to their own; each inbound protocol, chat included, to
 * `src/protocols/<name>/`.)
 */
export function createGatewayFeature(deps: GatewayDeps): Feature {
  return {
    name: 'gateway',
    async register(app) {
      const typed = app as unknown as App;
      registerEmbeddingsRoute(typed, deps);
      registerImagesRoute(typed, deps);
      registerSpeechRoute(typed, deps);
      registerRealtimeRoute(typed, deps);
      registerRealtimeClientSecretRoute(typed, deps);
      // Multipart parsing exists only inside this scope, so no other route accepts a multipart body.
      await app.register(async (scope) => {
        await scope.register(multipart, { limits: { fileSize: deps.config.BODY_LIMIT_UPLOAD_BYTES, files: 1 } });
        registerTranscriptionRoute(scope as unknown as App, deps);
        registerTranslationRoute(scope as unknown as App, deps);
        registerImageEditsRoute(scope as unknown as App, deps);
      });
    },
  };
}
