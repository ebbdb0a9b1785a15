/** One Server-Sent Events frame: its event name and its data, parsed when it is JSON. */
export interface SseFrame {
  event: string;
  data: any;
}

/** Splits an SSE text into frames; a trailing frame without its blank-line terminator (a cut stream) is dropped. */
export function parseSse(text: string): SseFrame[] {
  const blocks = text.split('\n\n');
  blocks.pop();
  return blocks
    .filter((block) => block.trim())
    .map((block) => {
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      const joined = data.join('\n');
      try {
        return { event, data: JSON.parse(joined) };
      } catch {
        return { event, data: joined };
      }
    });
}
