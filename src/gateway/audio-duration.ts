/**
 * The playing time of an uploaded audio file, read from its own headers, so that a transcription is held
 * for the audio it really carries rather than a flat hour. WAV (PCM) and MP3 are read; any other format,
 * or a file whose headers do not add up, has no readable duration (the route answers a 400).
 *
 * Security invariant: the duration is never smaller than what a decoder plays. WAV: only PCM is accepted,
 * and its byte rate must equal `sampleRate × blockAlign` (a forged rate cannot shrink the time); a data size
 * past the end of the file counts the bytes present. MP3: every frame in the file is counted, resyncing
 * past garbage as decoders do, so a short first frame or a forged Xing header cannot hide the rest. Both
 * readers are linear in the file's length (at most `BODY_LIMIT_UPLOAD_BYTES`). An MP3 in which more than a few KB
 * (and 5%) is not frames this reader understands has no readable duration.
 */

/** Seconds of audio in `bytes`, or null when the format is not WAV or MP3 or its headers are not readable. */
export function audioDurationSeconds(bytes: Uint8Array): number | null {
  if (isWav(bytes)) return wavSeconds(bytes);
  return mp3Seconds(bytes);
}

const ascii = (bytes: Uint8Array, at: number, length: number) =>
  String.fromCharCode(...bytes.subarray(at, at + length));

function isWav(bytes: Uint8Array): boolean {
  return (
    bytes.length >= 12 &&
    (ascii(bytes, 0, 4) === 'RIFF' || ascii(bytes, 0, 4) === 'RF64') &&
    ascii(bytes, 8, 4) === 'WAVE'
  );
}

/** PCM (1), IEEE float (3), and WAVE_FORMAT_EXTENSIBLE (0xFFFE, whose subformat is PCM or float in practice). */
const PCM_FORMATS = new Set([1, 3, 0xfffe]);

/** Duration of a RIFF/WAVE file: the bytes of its `data` chunk over the format's byte rate. */
function wavSeconds(bytes: Uint8Array): number | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let byteRate: number | null = null;
  for (let at = 12; at + 8 <= bytes.length;) {
    const id = ascii(bytes, at, 4);
    const size = view.getUint32(at + 4, true);
    const body = at + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > bytes.length) return null;
      const format = view.getUint16(body, true);
      const channels = view.getUint16(body + 2, true);
      const sampleRate = view.getUint32(body + 4, true);
      const declaredRate = view.getUint32(body + 8, true);
      const blockAlign = view.getUint16(body + 12, true);
      const bits = view.getUint16(body + 14, true);
      if (!PCM_FORMATS.has(format) || channels === 0 || sampleRate === 0 || bits === 0) return null;
      if (blockAlign !== channels * Math.ceil(bits / 8) || declaredRate !== sampleRate * blockAlign) return null;
      byteRate = declaredRate;
    } else if (id === 'data') {
      if (byteRate === null) return null;
      // A streamed WAV says 0 or 0xFFFFFFFF (and RF64 keeps the size elsewhere): count the bytes present.
      const present = bytes.length - body;
      const dataBytes = size === 0 || size === 0xffffffff || size > present ? present : size;
      return dataBytes / byteRate;
    }
    at = body + size + (size % 2);
  }
  return null;
}

/** Bit rates in kbit/s by MPEG version 1 (index 0) or 2/2.5 (index 1), then layer I, II, III, then the 4-bit index. */
const BIT_RATES = [
  [
    [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, -1],
    [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, -1],
    [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, -1],
  ],
  [
    [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256, -1],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, -1],
    [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, -1],
  ],
];
/** Sample rates by version bits (`00` 2.5, `10` 2, `11` 1) and the 2-bit index. */
const SAMPLE_RATES: Record<number, number[]> = {
  0: [11025, 12000, 8000],
  2: [22050, 24000, 16000],
  3: [44100, 48000, 32000],
};

/** One MPEG audio frame header at `at`: its length in bytes and its duration in seconds, or null. */
function mpegFrame(bytes: Uint8Array, at: number): { length: number; seconds: number } | null {
  if (at + 4 > bytes.length || bytes[at] !== 0xff || (bytes[at + 1]! & 0xe0) !== 0xe0) return null;
  const versionBits = (bytes[at + 1]! >> 3) & 3;
  const layerBits = (bytes[at + 1]! >> 1) & 3;
  const rateIndex = bytes[at + 2]! >> 4;
  const sampleIndex = (bytes[at + 2]! >> 2) & 3;
  const padding = (bytes[at + 2]! >> 1) & 1;
  if (versionBits === 1 || layerBits === 0 || sampleIndex === 3) return null;
  const layer = 4 - layerBits; // 1, 2 or 3
  const v1 = versionBits === 3;
  const kbps = BIT_RATES[v1 ? 0 : 1]![layer - 1]![rateIndex]!;
  if (kbps <= 0) return null; // "free" and "bad" bit rates
  const sampleRate = SAMPLE_RATES[versionBits]![sampleIndex]!;
  const samples = layer === 1 ? 384 : layer === 3 && !v1 ? 576 : 1152;
  const length =
    layer === 1
      ? (Math.floor((12 * kbps * 1000) / sampleRate) + padding) * 4
      : Math.floor(((samples / 8) * kbps * 1000) / sampleRate) + padding;
  return length >= 4 ? { length, seconds: samples / sampleRate } : null;
}

/** The length of an ID3v2 tag at `at` (header included), or 0. */
function id3Length(bytes: Uint8Array, at: number): number {
  if (at + 10 > bytes.length || ascii(bytes, at, 3) !== 'ID3') return 0;
  const size =
    ((bytes[at + 6]! & 0x7f) << 21) |
    ((bytes[at + 7]! & 0x7f) << 14) |
    ((bytes[at + 8]! & 0x7f) << 7) |
    (bytes[at + 9]! & 0x7f);
  return 10 + size + (bytes[at + 5]! & 0x10 ? 10 : 0);
}

/**
 * Duration of an MPEG audio (MP3) file: the sum of every frame's duration. A frame counts when it follows
 * the previous frame directly, or when another header follows it (or it ends the file), which rules out
 * false syncs in garbage; a byte that starts no such frame is skipped, as decoders resync. Null when no
 * two consecutive frames are found (not an MP3).
 */
function mp3Seconds(bytes: Uint8Array): number | null {
  const start = id3Length(bytes, 0);
  let at = start;
  let seconds = 0;
  let frames = 0;
  let covered = 0;
  let inSync = false;
  while (at + 4 <= bytes.length) {
    const frame = mpegFrame(bytes, at);
    if (frame) {
      const next = at + frame.length;
      if (inSync || next === bytes.length || (next < bytes.length && mpegFrame(bytes, next))) {
        seconds += frame.seconds;
        frames++;
        covered += Math.min(next, bytes.length) - at;
        at = next;
        inSync = true;
        continue;
      }
    }
    inSync = false;
    at++;
  }
  // Audio this reader cannot frame (free-format bit rates, another codec spliced in) may still play
  // upstream: a file that is more than a little of it has no readable duration.
  const unframed = bytes.length - start - covered;
  if (unframed > Math.max(UNFRAMED_BYTES_ALLOWED, (bytes.length - start) / 20)) return null;
  return frames >= 2 ? seconds : null;
}

/** Bytes outside frames an MP3 may carry (an ID3v1 or APE tag, padding); beyond it and 5%, it is refused. */
const UNFRAMED_BYTES_ALLOWED = 4096;
