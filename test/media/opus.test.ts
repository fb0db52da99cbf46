import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpusCodec } from '../../src/media/opus.js';
import { FRAME_SAMPLES, concatPcm, rms, tone } from '../../src/media/audio.js';

/** Signal to noise of `decoded` against `original`, in dB, at the codec delay (0-120 samples) that suits it best. */
function snrDb(original: Int16Array, decoded: Int16Array): number {
  let best = -Infinity;
  // Past the first 100 ms (the codec's start-up).
  for (let delay = 0; delay <= 120; delay++) {
    let signal = 0;
    let noise = 0;
    for (let i = 800; i < original.length - delay; i++) {
      signal += original[i]! ** 2;
      noise += (original[i]! - decoded[i + delay]!) ** 2;
    }
    best = Math.max(best, 10 * Math.log10(signal / Math.max(noise, 1)));
  }
  return best;
}

function roundTrip(codec: OpusCodec, pcm: Int16Array): { decoded: Int16Array; bytes: number } {
  const out: Int16Array[] = [];
  let bytes = 0;
  for (let at = 0; at + FRAME_SAMPLES <= pcm.length; at += FRAME_SAMPLES) {
    const packet = codec.encode(pcm.subarray(at, at + FRAME_SAMPLES));
    bytes += packet.length;
    out.push(codec.decode(packet)!);
  }
  return { decoded: concatPcm(out), bytes };
}

describe('OpusCodec: Opus at the pipeline’s 8 kHz', () => {
  it('a sine comes back through encode and decode with little noise, in 20 ms packets of about 16 kbit/s', () => {
    const codec = new OpusCodec();
    try {
      for (const hz of [440, 1000]) {
        const sine = tone([hz], 1000);
        const { decoded, bytes } = roundTrip(codec, sine);
        assert.equal(decoded.length, sine.length, '160 samples for each 20 ms packet');
        const snr = snrDb(sine, decoded);
        assert.ok(snr > 12, `${hz} Hz: SNR ${snr.toFixed(1)} dB`);
        // 50 packets a second: 16 kbit/s is 40 bytes a packet.
        assert.ok(bytes / 50 < 60, `${(bytes / 50).toFixed(1)} bytes a packet`);
      }
    } finally {
      codec.close();
    }
  });

  it('with FEC for the peer, packets carry the redundancy (larger), and still decode', () => {
    const plain = new OpusCodec();
    const fec = new OpusCodec({ fec: true, expectedLossPercent: 20 });
    try {
      const speechLike = tone([300, 700, 1900], 1000, 9000);
      const a = roundTrip(plain, speechLike);
      const b = roundTrip(fec, speechLike);
      assert.ok(snrDb(speechLike, b.decoded) > 5, 'decodes');
      assert.notEqual(a.bytes, b.bytes, 'the FEC encoder sends other packets');
    } finally {
      plain.close();
      fec.close();
    }
  });

  it('a lost packet is concealed with audio that goes on from what was heard, not silence', () => {
    const codec = new OpusCodec();
    try {
      roundTrip(codec, tone([440], 500));
      const concealed = codec.conceal(FRAME_SAMPLES);
      assert.equal(concealed.length, FRAME_SAMPLES);
      assert.ok(rms(concealed) > 1000, `concealment level ${rms(concealed).toFixed(0)}`);
      // Several frames at once (a gap of three packets).
      assert.equal(codec.conceal(3 * FRAME_SAMPLES).length, 3 * FRAME_SAMPLES);
    } finally {
      codec.close();
    }
  });

  it('what is no Opus packet decodes to null', () => {
    const codec = new OpusCodec();
    try {
      assert.equal(codec.decode(Buffer.alloc(0)), null);
      // Code 3 (a count of frames follows), 63 frames of 20 ms: longer than a packet may be.
      assert.equal(codec.decode(Buffer.from([0xff, 0xff])), null);
      assert.equal(codec.decode(Buffer.alloc(5000, 1)), null, 'longer than any packet');
    } finally {
      codec.close();
    }
  });

  it('many calls’ codecs at once keep their own state: interleaved, each sends what it would alone', () => {
    const sine = tone([523], 400);
    const alone = new OpusCodec();
    const expected = roundTrip(alone, sine).decoded;
    alone.close();
    const codecs = Array.from({ length: 40 }, () => new OpusCodec());
    const outs = codecs.map(() => [] as Int16Array[]);
    for (let at = 0; at + FRAME_SAMPLES <= sine.length; at += FRAME_SAMPLES)
      codecs.forEach((codec, i) => outs[i]!.push(codec.decode(codec.encode(sine.subarray(at, at + FRAME_SAMPLES)))!));
    for (const out of outs) assert.deepEqual(concatPcm(out), expected);
    for (const codec of codecs) codec.close();
    codecs[0]!.close();
    assert.throws(() => codecs[0]!.encode(sine.subarray(0, FRAME_SAMPLES)), /closed/);
  });
});
