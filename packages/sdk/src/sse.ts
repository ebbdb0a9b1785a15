/** One server-sent event: its `event:` name (default `message`) and its joined `data:` lines. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/** Parses a `text/event-stream` body into events, per the WHATWG rules the gateway's streams follow. */
export async function* readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body
    .pipeThrough(new TextDecoderStream() as unknown as ReadableWritablePair<string, Uint8Array>)
    .getReader();
  let buffer = '';
  let event = 'message';
  let data: string[] = [];
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let newline: number;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (data.length) yield { event, data: data.join('\n') };
          event = 'message';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
      }
    }
    if (data.length) yield { event, data: data.join('\n') };
  } finally {
    // Stops the download when the consumer breaks out early (a stream cut by the client is charged for what was produced).
    await reader.cancel().catch(() => {});
  }
}
