import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RtpFrames, type RtpDecoder } from '../../src/media/rtp-frames.js';
import { FRAME_SAMPLES, alawToMulaw, decodeMulaw, linearToMulaw, mulawToAlaw } from '../../src/media/audio.js';

/** A mu-law ramp: byte i of the stream is i mod 256, so lost or repeated samples show. */
const stream = (samples: number) => Buffer.from(Array.from({ length: samples }, (_, i) => i % 256));

function receive(packetSamples: number, total: number, payloadType = 0) {
  const frames: { frame: Buffer; ms: number }[] = [];
  const rtp = new RtpFrames((frame, ms) => frames.push({ frame, ms }));
  const audio = stream(total);
  for (let at = 0, seq = 0; at < total; at += packetSamples, seq++) {
    const chunk = audio.subarray(at, at + packetSamples);
    rtp.take({
      payloadType,
      sequence: (65530 + seq) & 0xffff,
      timestamp: (0xfffffe00 + at) >>> 0,
      payload: payloadType === 8 ? mulawToAlaw(chunk) : chunk,
    });
  }
  return { frames, audio, rtp };
}

describe('RtpFrames: G.711 packets into 20 ms frames', () => {
  for (const ms of [10, 20, 30, 60]) {
    it(`${ms} ms packets: every sample arrives once, in order, as 20 ms frames on the packets' clock`, () => {
      const { frames, audio } = receive(ms * 8, 2400);
      assert.ok(frames.every((f) => f.frame.length === FRAME_SAMPLES));
      assert.deepEqual(Buffer.concat(frames.map((f) => f.frame)), audio);
      assert.deepEqual(
        frames.map((f) => f.ms),
        frames.map((_, i) => i * 20),
      );
    });
  }

  it('PCMA in 30 ms packets comes out as the same mu-law audio', () => {
    const { frames, audio } = receive(240, 2400, 8);
    assert.equal(frames.length, 15);
    // The same as converting the whole stream at once (A-law and mu-law differ by a step here and there).
    assert.deepEqual(Buffer.concat(frames.map((f) => f.frame)), alawToMulaw(mulawToAlaw(audio)));
  });

  it("a lost packet drops the previous packet's tail instead of joining it to audio from later", () => {
    const frames: Buffer[] = [];
    const rtp = new RtpFrames((frame) => frames.push(frame));
    const audio = stream(240 * 4);
    // Packets 0, 1 and 3 of 30 ms: packet 2 is lost.
    for (const seq of [0, 1, 3])
      rtp.take({
        payloadType: 0,
        sequence: seq,
        timestamp: seq * 240,
        payload: audio.subarray(seq * 240, seq * 240 + 240),
      });
    const out = Buffer.concat(frames);
    // 0 and 1 join into three frames; the gap is filled with silence; packet 3 gives one frame, its tail waits.
    assert.deepEqual(out.subarray(0, 480), audio.subarray(0, 480));
    assert.deepEqual(out.subarray(out.length - FRAME_SAMPLES), audio.subarray(720, 880));
    assert.equal(rtp.stats.filled, 1);
  });

  it('late and repeated packets are dropped', () => {
    const frames: Buffer[] = [];
    const rtp = new RtpFrames((frame) => frames.push(frame));
    const audio = stream(160 * 3);
    const packet = (seq: number) => ({
      payloadType: 0,
      sequence: seq,
      timestamp: seq * 160,
      payload: audio.subarray(seq * 160, seq * 160 + 160),
    });
    for (const seq of [0, 1, 0, 2, 1]) rtp.take(packet(seq));
    assert.deepEqual(Buffer.concat(frames), audio);
    assert.equal(rtp.stats.late, 2);
  });

  it('a sender that numbers its packets anew (a new talk spurt from the start) is followed, its audio after the last', () => {
    const frames: { frame: Buffer; ms: number }[] = [];
    const rtp = new RtpFrames((frame, ms) => frames.push({ frame, ms }));
    const audio = stream(160 * 300);
    const packet = (seq: number, n: number) => ({
      payloadType: 0,
      sequence: seq,
      timestamp: seq * 160,
      payload: audio.subarray(n * 160, n * 160 + 160),
    });
    // 200 packets, then the same sender again from sequence 0 (as sipp replays a pcap).
    for (let n = 0; n < 200; n++) rtp.take(packet(n, n));
    for (let n = 0; n < 100; n++) rtp.take(packet(n, 200 + n));
    assert.equal(rtp.stats.restarts, 1);
    // The restart's first packet waits for the second to confirm it; then all of the rest arrives.
    assert.equal(frames.length, 299);
    assert.deepEqual(frames[200]!.frame, audio.subarray(201 * 160, 202 * 160));
    assert.equal(frames[200]!.ms, 200 * 20, 'on the clock after the last frame');
    assert.equal(frames.at(-1)!.ms, 298 * 20);
  });

  it('a far end that stops sending (silence suppression) is heard as silence, one frame per 20 ms, until it sends again', () => {
    let now = 0;
    const frames: { frame: Buffer; ms: number }[] = [];
    const rtp = new RtpFrames(
      (frame, ms) => frames.push({ frame, ms }),
      () => now,
    );
    const talk = (seq: number, timestamp: number) =>
      rtp.take({ payloadType: 0, sequence: seq, timestamp, payload: Buffer.alloc(FRAME_SAMPLES, 0x20) });
    rtp.fillQuiet();
    assert.equal(frames.length, 0, 'nothing before the far end has sent anything');
    for (let i = 0; i < 5; i++, now += 20) {
      talk(i, i * FRAME_SAMPLES);
      rtp.fillQuiet();
    }
    assert.equal(frames.length, 5, 'a line that sends needs no filling');
    // It falls silent on the wire at 80 ms: after a jitter's grace, silence in real time.
    now = 80 + 60;
    rtp.fillQuiet();
    assert.equal(frames.length, 5);
    now = 80 + 80;
    rtp.fillQuiet();
    now = 80 + 200;
    rtp.fillQuiet();
    const quiet = frames.slice(5);
    assert.equal(quiet.length, 7);
    assert.ok(
      quiet.every((f) => f.frame.every((b) => b === 0xff)),
      'silence',
    );
    assert.deepEqual(
      quiet.map((f) => f.ms),
      [100, 120, 140, 160, 180, 200, 220],
    );
    // It talks again (sequence on, timestamp jumped by its silence): no more filling.
    talk(5, 3000 * 8);
    rtp.fillQuiet();
    assert.equal(frames.length, 13);
    assert.equal(rtp.stats.quiet, 7);
    rtp.close();
    now += 1000;
    rtp.fillQuiet();
    talk(6, 3000 * 8 + FRAME_SAMPLES);
    assert.equal(frames.length, 13, 'nothing after close');
  });
});

describe('RtpFrames: packets of a codec with a decoder (Opus at 48 kHz)', () => {
  /**
   * A stand-in codec: packet [n] is 20 ms of the level n * 100, concealment the level -1000; it
   * counts what it was asked.
   */
  function fakeOpus() {
    const calls = { decoded: [] as number[], concealed: [] as number[] };
    const decoder: RtpDecoder = {
      payloadType: 111,
      clockRate: 48_000,
      decode: (payload) => {
        calls.decoded.push(payload[0]!);
        return new Int16Array(FRAME_SAMPLES).fill(payload[0]! * 100);
      },
      conceal: (samples) => {
        calls.concealed.push(samples);
        return new Int16Array(samples).fill(-1000);
      },
    };
    const frames: { frame: Buffer; ms: number }[] = [];
    const rtp = new RtpFrames((frame, ms) => frames.push({ frame, ms }), undefined, decoder);
    const take = (seq: number, n: number, timestamp = (0xffffe000 + n * 960) >>> 0) =>
      rtp.take({ payloadType: 111, sequence: seq, timestamp, payload: Buffer.of(n) });
    return { calls, frames, rtp, take };
  }
  const level = (frame: Buffer) => decodeMulaw(frame)[0];

  it("decodes in order, on the packets' 48 kHz clock brought to 8 kHz, across its wrap", () => {
    const { frames, take } = fakeOpus();
    // 48 kHz timestamps from just before 2^32, 960 a packet: they wrap at the ninth.
    for (let n = 0; n < 20; n++) take(n, n);
    assert.equal(frames.length, 20);
    assert.deepEqual(
      frames.map((f) => f.ms),
      frames.map((_, i) => i * 20),
    );
    assert.deepEqual(
      frames.map((f) => level(f.frame)),
      frames.map((_, i) => decodeMulaw(Buffer.of(linearToMulaw(i * 100)))[0]),
    );
  });

  it('a late packet is dropped undecoded; a lost one is concealed by the codec, not silence', () => {
    const { calls, frames, rtp, take } = fakeOpus();
    for (const n of [0, 1, 2, 1, 5, 6]) take(n, n);
    assert.deepEqual(calls.decoded, [0, 1, 2, 5, 6], 'the late packet never reached the decoder');
    assert.deepEqual(calls.concealed, [2 * FRAME_SAMPLES], 'one concealment for the two lost packets');
    assert.deepEqual(
      frames.map((f) => f.ms),
      [0, 20, 40, 60, 80, 100, 120],
    );
    assert.equal(level(frames[3]!.frame), decodeMulaw(Buffer.of(linearToMulaw(-1000)))[0]);
    assert.equal(level(frames[4]!.frame), decodeMulaw(Buffer.of(linearToMulaw(-1000)))[0]);
    assert.equal(rtp.stats.late, 1);
    assert.equal(rtp.stats.filled, 2);
  });

  it("other payload types than G.711's and the decoder's are ignored", () => {
    const { calls, frames, rtp } = fakeOpus();
    rtp.take({ payloadType: 13, sequence: 0, timestamp: 0, payload: Buffer.of(1) });
    rtp.take({ payloadType: 0, sequence: 1, timestamp: 160, payload: Buffer.alloc(FRAME_SAMPLES, 0xff) });
    assert.deepEqual(calls.decoded, []);
    assert.equal(frames.length, 1);
  });
});
