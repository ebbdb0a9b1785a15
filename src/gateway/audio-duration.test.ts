import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { audioDurationSeconds } from './audio-duration.ts';
import { mp3File, wavFile } from './testing.ts';

describe('audio duration read from the file header', () => {
  it("reads a PCM WAV file's duration from its byte rate and data size", () => {
    assert.equal(audioDurationSeconds(wavFile(20)), 20);
    assert.equal(audioDurationSeconds(wavFile(1.5, 44_100)), 1.5);
  });

  it('counts the bytes present when a WAV data size is unknown (streamed) or larger than the file', () => {
    const streamed = wavFile(3);
    new DataView(streamed.buffer).setUint32(40, 0xffffffff, true);
    assert.equal(audioDurationSeconds(streamed), 3);
  });

  it('refuses a WAV whose byte rate does not match its format (a forged rate cannot shrink the time)', () => {
    const forged = wavFile(60);
    new DataView(forged.buffer).setUint32(28, 16_000 * 1000, true);
    assert.equal(audioDurationSeconds(forged), null);
  });

  it('sums every MP3 frame, past an ID3 tag and past garbage between frames', () => {
    const frames = mp3File(100);
    assert.ok(Math.abs(audioDurationSeconds(frames)! - (100 * 1152) / 44_100) < 1e-9);
    const id3 = new Uint8Array([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 20, ...new Uint8Array(20)]);
    const garbage = new Uint8Array(333).fill(0x55);
    const file = new Uint8Array([...id3, ...mp3File(50), ...garbage, ...mp3File(50)]);
    assert.ok(Math.abs(audioDurationSeconds(file)! - (100 * 1152) / 44_100) < 1e-9);
  });

  it('has no duration for an MP3 that is mostly bytes it cannot frame (free-format audio could play upstream)', () => {
    const file = new Uint8Array([...mp3File(10), ...new Uint8Array(100_000).fill(0x55)]);
    assert.equal(audioDurationSeconds(file), null);
  });

  it('has no duration for audio that is neither WAV nor MP3, or for noise', () => {
    assert.equal(audioDurationSeconds(new TextEncoder().encode('OggS not really')), null);
    assert.equal(audioDurationSeconds(new Uint8Array(4096).fill(7)), null);
    assert.equal(audioDurationSeconds(new Uint8Array(0)), null);
  });
});
