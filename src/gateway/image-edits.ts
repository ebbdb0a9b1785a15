import Value from 'typebox/value';
import type { App } from '../platform/http/server.ts';
import type { GatewayDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import { patternRule } from '../platform/http/pattern-rules.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import { countTextTokens } from '../providers/tokens.ts';
import { meteredCall } from './common.ts';
import { worstPromptTokens } from './chat-plan.ts';
import { ImagesBody, type ImagesRequest } from './images.ts';
import { imagePricingOf, imagesAnswer, imagesUsage, imagesWorstCase, type ImagePricing } from './image-billing.ts';
import { IMAGES_ANSWERS } from './openai-answers.ts';
import {
  fieldTooLong,
  fileTooLarge,
  MULTIPART_FIELD_BYTES,
  multipartRefusal,
  type MultipartWording,
} from './multipart.ts';

/** OpenAI's own bound on the source images of one edit; `MAX_IMAGES_PER_REQUEST` may lower it. */
const OPENAI_MAX_EDIT_IMAGES = 16;

/**
 * Image edit text fields passed upstream as sent: none changes the price once the quality and size are priced
 * and every input image is held at its budget (README "Pass-through allow-list"). Left off, so refused with 400
 * `UNSUPPORTED_PARAMETER`: `input_fidelity` (`high` makes each input image cost more tokens than its budget),
 * `partial_images` and `stream` (extra output images), and every field added upstream later.
 */
export const IMAGE_EDITS_PASSED: readonly string[] = [
  'model',
  'prompt',
  'n',
  'quality',
  'size',
  'response_format',
  'output_format',
  'output_compression',
  'background',
  'user',
];

/** The file parts an edit takes: its source images (the SDK names one `image`, several `image[]`) and a mask. */
const IMAGE_PARTS = ['image', 'image[]'];
const MASK_PART = 'mask';

/** How the parser's refusals of an edit's body are worded (see multipart.ts). */
const IMAGE_UPLOAD: MultipartWording = {
  file: 'An image file is',
  limits: {
    FST_FIELDS_LIMIT:
      'The multipart body has more than 32 fields; send the images, the prompt, the model and the options you need.',
    FST_PARTS_LIMIT:
      'The multipart body has too many parts; send the images, the prompt, the model and the options you need.',
  },
};

/**
 * The 400 `TOO_MANY_IMAGES` of an edit with more than `max` source images: `images` counted, or unknown when the
 * parser stopped at the file after the most an edit takes (the images and a mask).
 */
function tooManyImages(max: number, images?: number): ApiError {
  const counted = images === undefined ? `more than ${max + 1} files` : `${images} source images`;
  return new ApiError(
    'TOO_MANY_IMAGES',
    `This edit has ${counted}; at most ${max} source images and one mask are accepted per edit (OpenAI's 16, or MAX_IMAGES_PER_REQUEST when lower).`,
    { details: { param: 'image', ...(images === undefined ? {} : { images }), maxImages: max } },
  );
}

/** One uploaded file, as the client sent it (field name, file name and type are forwarded unchanged). */
interface Upload {
  field: string;
  bytes: Buffer;
  filename: string;
  type: string;
}

/**
 * `POST /api/v1/images/edits` (the OpenAI SDK's `images.edit`), registered in the one scope that parses multipart
 * bodies: holds `request` + the per-image price of the asked quality and size × n + the prompt's tokens + each
 * source image and the mask at the model's `imageTokens` at the prompt price, and is charged for the images
 * returned (never more than `n`) with the same inputs.
 */
export function registerImageEditsRoute(app: App, ctx: GatewayDeps): void {
  const limit = ctx.config.BODY_LIMIT_UPLOAD_BYTES;
  const maxImages = Math.min(OPENAI_MAX_EDIT_IMAGES, ctx.config.MAX_IMAGES_PER_REQUEST);
  app.post(
    '/api/v1/images/edits',
    {
      schema: {
        tags: ['ai'],
        summary: 'Edit images (OpenAI-compatible multipart: image or image[], mask, prompt, model, …)',
        security: [{ bearer: [] }],
        consumes: ['multipart/form-data'],
      },
      config: { auth: ['ai:images'], billed: true, documentedResponses: IMAGES_ANSWERS },
    },
    async (request, reply) => {
      if (!request.isMultipart())
        throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Send the images and the prompt as multipart/form-data.');
      const fields: Record<string, string> = {};
      const uploads: Upload[] = [];
      let total = 0;
      // Only the parser's work is inside: anything else it throws is about the body the client sent.
      try {
        for await (const part of request.parts({
          // The most an edit takes, source images and a mask: one file more is refused before it is buffered.
          limits: { fileSize: limit, files: maxImages + 1, fields: 32, fieldSize: MULTIPART_FIELD_BYTES },
        })) {
          if (part.type === 'file') {
            const bytes = await part.toBuffer();
            if (part.file.truncated) throw fileTooLarge(limit, IMAGE_UPLOAD.file);
            // The files together, not each alone, are bounded: what is buffered stays under twice the limit.
            total += bytes.length;
            if (total > limit) throw fileTooLarge(limit, 'The image files together are');
            uploads.push({
              field: part.fieldname,
              bytes,
              filename: part.filename || 'image.png',
              type: part.mimetype || 'application/octet-stream',
            });
          } else {
            if (part.valueTruncated) throw fieldTooLong(part.fieldname);
            fields[part.fieldname] = String(part.value);
          }
        }
      } catch (error) {
        if ((error as { code?: string } | null)?.code === 'FST_FILES_LIMIT') throw tooManyImages(maxImages);
        throw multipartRefusal(error, limit, IMAGE_UPLOAD);
      }
      const body = editRequest(fields, uploads, maxImages);
      const inputs = uploads.length;
      const asked = body.n ?? 1;
      const promptTokens = countTextTokens(body.prompt);
      const pricingOf = (model: CatalogueModel) => imagePricingOf(body, model) as ImagePricing;
      // Each source image and the mask is read by the model as an input image: at most its budget.
      const inputImageTokens = (model: CatalogueModel) => inputs * (model.imageTokens ?? 0);
      const answered = await meteredCall(ctx, request, reply, {
        kind: 'images',
        modelId: body.model,
        supports: (adapter) => !!adapter.imageEdits,
        refuses: (model) => {
          if (model.imageTokens === null)
            return new ApiError(
              'IMAGE_INPUT_UNSUPPORTED',
              `The model "${model.id}" does not accept input images (it has no image-token budget in the catalogue); send the edit to a model that does, or ask the operator to set the model's imageTokens.`,
              { details: { param: 'image' } },
            );
          const pricing = imagePricingOf(body, model);
          return pricing instanceof ApiError ? pricing : null;
        },
        worstCase: (model) =>
          imagesWorstCase(model, pricingOf(model), worstPromptTokens(promptTokens) + inputImageTokens(model), asked),
        call: (adapter, model, signal) => {
          const form = new FormData();
          for (const [name, value] of Object.entries(fields))
            form.append(name, name === 'model' ? model.upstreamModel : value);
          for (const upload of uploads)
            form.append(upload.field, new Blob([new Uint8Array(upload.bytes)], { type: upload.type }), upload.filename);
          return adapter.imageEdits!(form, { signal });
        },
        usage: (result, model) =>
          imagesUsage(result, model, pricingOf(model), {
            promptTokens: promptTokens + inputImageTokens(model),
            asked,
          }),
      });
      return answered ? imagesAnswer(answered.result, answered.charged) : reply;
    },
  );
}

/**
 * The edit's text fields as an Images API request, checked against the generations' schema (the one source of
 * what a model, prompt, n, quality and size may be), and its files: at least one source image, at most
 * `maxImages`, at most one mask, none empty; any other field or file is refused naming it.
 */
/** A field's failure in words: a pattern its owner described (a model id) as that rule, not the expression. */
function reasonOf(error: { keyword?: string; params?: unknown; message?: string } | undefined): string {
  const rule = error?.keyword === 'pattern' ? patternRule((error.params as { pattern?: unknown }).pattern) : undefined;
  return rule ?? error?.message ?? 'is not valid';
}

function editRequest(fields: Record<string, string>, uploads: Upload[], maxImages: number): ImagesRequest {
  for (const name of Object.keys(fields)) {
    if (IMAGE_PARTS.includes(name) || name === MASK_PART)
      throw new ApiError(
        'INVALID_REQUEST',
        `"${name}" must be a file part of the multipart body (a PNG, JPEG or WebP image), not a text field.`,
        { details: { param: name } },
      );
    if (!IMAGE_EDITS_PASSED.includes(name))
      throw new ApiError(
        'UNSUPPORTED_PARAMETER',
        `The field "${name}" is not on the image edits pass-through allow-list; the gateway passes only fields whose cost it can hold for (README "Pass-through allow-list").`,
        { details: { param: name } },
      );
  }
  for (const upload of uploads) {
    if (!IMAGE_PARTS.includes(upload.field) && upload.field !== MASK_PART)
      throw new ApiError(
        'UNSUPPORTED_PARAMETER',
        `The file "${upload.field}" is not one an edit takes; send the source images as "image" (or "image[]") and an optional "mask".`,
        { details: { param: upload.field } },
      );
    if (!upload.bytes.length)
      throw new ApiError('INVALID_REQUEST', `The file "${upload.field}" is empty; send the image's bytes.`, {
        details: { param: upload.field },
      });
  }
  const images = uploads.filter((upload) => IMAGE_PARTS.includes(upload.field)).length;
  if (images === 0)
    throw new ApiError(
      'INVALID_REQUEST',
      'The multipart body needs at least one source image, as a file named "image".',
      {
        details: { param: 'image' },
      },
    );
  if (images > maxImages) throw tooManyImages(maxImages, images);
  if (uploads.length - images > 1)
    throw new ApiError('INVALID_REQUEST', 'The multipart body carries more than one "mask"; send at most one.', {
      details: { param: MASK_PART },
    });
  // Multipart fields are text: `n` is read as the whole number it spells, anything else fails the schema as sent.
  const body: Record<string, unknown> = { ...fields };
  if (fields.n !== undefined && /^\d{1,6}$/.test(fields.n)) body.n = Number(fields.n);
  if (!Value.Check(ImagesBody, body)) {
    const [first] = Value.Errors(ImagesBody, body);
    const missing = (first?.params as { requiredProperties?: string[] } | undefined)?.requiredProperties?.[0];
    const param = missing ?? (first?.instancePath.replace(/^\//, '') || 'body');
    throw new ApiError(
      'INVALID_REQUEST',
      missing
        ? `The multipart body needs a "${missing}" field${missing === 'model' ? ' naming the model as <vendor>/<model>' : ''}.`
        : `The field "${param}" ${reasonOf(first)} (as sent: ${JSON.stringify(fields[param] ?? '')}).`,
      { details: { param } },
    );
  }
  return body as ImagesRequest;
}
