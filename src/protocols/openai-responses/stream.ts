import type { CanonicalEvent, CanonicalUsage, FinishReason } from '../../gateway/canonical.ts';
import { ERROR_CODES } from '../../platform/errors.ts';
import { itemId } from './ids.ts';
import { namespacedCalls } from './parse.ts';
import {
  functionCallItem,
  messageItem,
  outputText,
  reasoningItem,
  responseObject,
  statusOf,
  type OutputItem,
  type ResponseFrame,
  type ResponseObject,
} from './render.ts';

/**
 * Renders canonical events as the Responses API's Server-Sent Events, each numbered by `sequence_number`:
 * `response.created`, `response.in_progress`, then per output item `response.output_item.added`, its
 * content (`response.content_part.added` + `response.output_text.delta`…, `response.reasoning_summary_*`,
 * `response.function_call_arguments.delta`), its `.done` events and `response.output_item.done`, and last
 * `response.completed` or `response.incomplete` with the whole Response and its usage. An error after
 * output began is `response.failed` then `error`.
 *
 * Text and reasoning items close when another item begins; function calls stay open until the end (an
 * upstream may interleave the argument deltas of parallel calls by index).
 */
export class ResponsesEventWriter {
  readonly #frame: ResponseFrame;
  #sequence = 0;
  readonly #output: OutputItem[] = [];
  /** The open message or reasoning item, by output index, with the text gathered so far. */
  #open: { index: number; kind: 'message' | 'reasoning'; text: string; signature?: string } | null = null;
  /** Open function calls: the upstream's tool index → output index and arguments so far. */
  readonly #calls = new Map<number, { index: number; args: string }>();
  #usage: CanonicalUsage | undefined;
  #began = false;

  /** The request's namespaced functions, by the name the upstream knows them by. */
  readonly #namespaces: ReadonlyMap<string, { namespace: string; name: string }>;

  constructor(frame: ResponseFrame) {
    this.#frame = frame;
    this.#namespaces = namespacedCalls(frame.request.tools);
  }

  /** The final Response object, once {@link end} rendered it. */
  final: ResponseObject | null = null;

  /** The frames that open the stream: `response.created` and `response.in_progress`. */
  begin(): string {
    this.#began = true;
    const response = responseObject(this.#frame, 'in_progress', []);
    return this.#event('response.created', { response }) + this.#event('response.in_progress', { response });
  }

  /** The frames of one canonical event (empty text when it shows nothing). */
  write(event: CanonicalEvent): string {
    let out = this.#began ? '' : this.begin();
    switch (event.type) {
      case 'start':
        return out;
      case 'text':
        if (event.delta === '') return out;
        out += this.#openItem('message');
        this.#open!.text += event.delta;
        return (
          out +
          this.#event('response.output_text.delta', {
            item_id: this.#id(this.#open!.index),
            output_index: this.#open!.index,
            content_index: 0,
            delta: event.delta,
            logprobs: [],
          })
        );
      case 'reasoning':
        out += this.#openItem('reasoning');
        if (event.signature) this.#open!.signature = (this.#open!.signature ?? '') + event.signature;
        if (event.delta === '') return out;
        this.#open!.text += event.delta;
        return (
          out +
          this.#event('response.reasoning_summary_text.delta', {
            item_id: this.#id(this.#open!.index),
            output_index: this.#open!.index,
            summary_index: 0,
            delta: event.delta,
          })
        );
      case 'tool_call_start': {
        out += this.#closeOpen();
        const index = this.#output.length;
        const item = functionCallItem(
          itemId(this.#frame.id, 'fc', index),
          event.id,
          event.name,
          '',
          'in_progress',
          this.#namespaces,
        );
        this.#output.push(item);
        this.#calls.set(event.index, { index, args: '' });
        return out + this.#event('response.output_item.added', { output_index: index, item });
      }
      case 'tool_call_delta': {
        const call = this.#calls.get(event.index);
        if (!call || event.arguments === '') return out;
        call.args += event.arguments;
        return (
          out +
          this.#event('response.function_call_arguments.delta', {
            item_id: this.#id(call.index),
            output_index: call.index,
            delta: event.arguments,
          })
        );
      }
      case 'usage':
        this.#usage = event.usage;
        return out;
      case 'end':
        return out + this.end(event.finishReason);
      case 'error':
        return (
          out +
          this.fail(event.code, event.message, {
            code: event.code,
            message: event.message,
            type: errorType(event.code),
          })
        );
    }
  }

  /** Closes every open item and renders `response.completed` (or `response.incomplete` when the cap or a filter cut it). */
  end(finish: FinishReason): string {
    if (this.final) return '';
    const { status, incomplete } = statusOf(finish);
    const itemStatus = status === 'completed' ? 'completed' : 'incomplete';
    let out = this.#closeOpen(itemStatus) + this.#closeCalls(itemStatus);
    this.final = responseObject(this.#frame, status, this.#output, { usage: this.#usage, incomplete });
    out += this.#event(
      status === 'incomplete' ? 'response.incomplete' : status === 'failed' ? 'response.failed' : 'response.completed',
      { response: this.final },
    );
    return out;
  }

  /**
   * After output began: `response.failed` (with the usage charged so far, when known) then an `error` event
   * carrying both OpenAI's flat fields and the gateway's error envelope (code, message, type and the
   * contract's restriction fields), so the `openai` SDK throws an APIError with the code, as it does for chat.
   */
  fail(code: string, message: string, envelope: Record<string, unknown>): string {
    if (this.final) return '';
    let out = this.#closeOpen('incomplete') + this.#closeCalls('incomplete');
    this.final = responseObject(this.#frame, 'failed', this.#output, {
      usage: this.#usage,
      error: { code: 'server_error', message },
    });
    out += this.#event('response.failed', { response: this.final });
    return (
      out +
      this.#event('error', {
        code,
        message,
        param: null,
        error: { code, message, type: 'server_error', param: null, ...envelope },
      })
    );
  }

  #id(index: number): string {
    return String(this.#output[index].id);
  }

  /** Opens a message or reasoning item unless one of that kind is the open one. */
  #openItem(kind: 'message' | 'reasoning'): string {
    if (this.#open?.kind === kind) return '';
    let out = this.#closeOpen();
    const index = this.#output.length;
    if (kind === 'message') {
      const item = messageItem(itemId(this.#frame.id, 'msg', index), '', 'in_progress');
      this.#output.push(item);
      out += this.#event('response.output_item.added', { output_index: index, item });
      out += this.#event('response.content_part.added', {
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: outputText(''),
      });
    } else {
      const item = reasoningItem(itemId(this.#frame.id, 'rs', index), '', undefined, 'in_progress');
      this.#output.push(item);
      out += this.#event('response.output_item.added', { output_index: index, item });
      out += this.#event('response.reasoning_summary_part.added', {
        item_id: item.id,
        output_index: index,
        summary_index: 0,
        part: { type: 'summary_text', text: '' },
      });
    }
    this.#open = { index, kind, text: '' };
    return out;
  }

  /** Closes the open message or reasoning item: its `.done` events and `response.output_item.done`. */
  #closeOpen(status: 'completed' | 'incomplete' = 'completed'): string {
    const open = this.#open;
    if (!open) return '';
    this.#open = null;
    const id = this.#id(open.index);
    const at = { item_id: id, output_index: open.index };
    let out = '';
    if (open.kind === 'message') {
      const item = messageItem(id, open.text, status);
      this.#output[open.index] = item;
      out += this.#event('response.output_text.done', { ...at, content_index: 0, text: open.text, logprobs: [] });
      out += this.#event('response.content_part.done', { ...at, content_index: 0, part: outputText(open.text) });
      return out + this.#event('response.output_item.done', { output_index: open.index, item });
    }
    const item = reasoningItem(id, open.text, open.signature, status);
    this.#output[open.index] = item;
    out += this.#event('response.reasoning_summary_text.done', { ...at, summary_index: 0, text: open.text });
    out += this.#event('response.reasoning_summary_part.done', {
      ...at,
      summary_index: 0,
      part: { type: 'summary_text', text: open.text },
    });
    return out + this.#event('response.output_item.done', { output_index: open.index, item });
  }

  /** Closes every open function call: `response.function_call_arguments.done` and `response.output_item.done`. */
  #closeCalls(status: 'completed' | 'incomplete'): string {
    let out = '';
    for (const call of this.#calls.values()) {
      const open = this.#output[call.index];
      const item = { ...open, arguments: call.args, status } as OutputItem;
      this.#output[call.index] = item;
      out += this.#event('response.function_call_arguments.done', {
        item_id: item.id,
        output_index: call.index,
        name: item.name,
        arguments: call.args,
      });
      out += this.#event('response.output_item.done', { output_index: call.index, item });
    }
    this.#calls.clear();
    return out;
  }

  #event(type: string, fields: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.#sequence++, ...fields })}\n\n`;
  }
}

/** The catalogue's `type` of an error code (a code from elsewhere is an upstream error). */
function errorType(code: string): string {
  return code in ERROR_CODES ? ERROR_CODES[code as keyof typeof ERROR_CODES].type : 'upstream_error';
}
