import assert from 'node:assert/strict';
import { test } from 'node:test';

import { FRAME_SAMPLES, dbfs, decodeMulaw, encodeMulaw, silence, tone, toFrames } from '../../src/media/audio.js';
import {
  BackgroundMixer,
  backgroundKind,
  backgroundMixer,
  backgroundTrack,
  type BackgroundKind,
} from '../../src/media/background.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import { ManualTimer } from '../../src/testing/manual-timer.js';

const KINDS: BackgroundKind[] = ['office', 'cafe', 'restaurant', 'static'];

/** dBFS of each 20 ms frame, sorted. */
function frameLevels(pcm: Int16Array): number[] {
  const levels: number[] = [];
  for (let at = 0; at < pcm.length; at += FRAME_SAMPLES) levels.push(dbfs(pcm.subarray(at, at + FRAME_SAMPLES)));
  return levels.sort((a, b) => a - b);
}

/** 20 ms frames whose high-frequency energy (first difference) jumps 10 dB over the median: clicks, clinks. */
function transients(pcm: Int16Array): number {
  const hf: number[] = [];
  for (let at = 0; at < pcm.length; at += FRAME_SAMPLES) {
    let sum = 0;
    for (let i = at + 1; i < at + FRAME_SAMPLES; i++) sum += (pcm[i]! - pcm[i - 1]!) ** 2;
    hf.push(10 * Math.log10(sum + 1));
  }
  const median = [...hf].sort((a, b) => a - b)[hf.length >> 1]!;
  return hf.filter((v) => v > median + 10).length;
}

test('background_track values map to tracks: null is line static, none and unknown are nothing', () => {
  assert.equal(backgroundKind(null), 'static');
  assert.equal(backgroundKind(undefined), 'static');
  assert.equal(backgroundKind('office'), 'office');
  assert.equal(backgroundKind('cafe'), 'cafe');
  assert.equal(backgroundKind('restaurant'), 'restaurant');
  assert.equal(backgroundKind('none'), null);
  assert.equal(backgroundKind('stadium'), null);
});

test('every track sits far under speech, quieter than -35 dBFS, and the restaurant is subtler than the cafe', () => {
  const level = (kind: BackgroundKind) => dbfs(backgroundTrack(kind).pcm);
  for (const kind of KINDS) {
    const { pcm } = backgroundTrack(kind);
    assert.ok(level(kind) <= -35 && level(kind) >= -47, `${kind}: ${level(kind)} dBFS`);
    let peak = 0;
    for (const s of pcm) peak = Math.max(peak, Math.abs(s));
    assert.ok(peak < 32768 * 10 ** (-12 / 20), `${kind} peaks at ${peak}`);
  }
  assert.ok(level('restaurant') < level('cafe'));
  assert.ok(level('static') < level('office'));
});

test('tracks loop seamlessly on whole frames and are made once, the same in every process', () => {
  for (const kind of KINDS) {
    const track = backgroundTrack(kind);
    const { pcm } = track;
    assert.equal(pcm.length % FRAME_SAMPLES, 0);
    assert.ok(pcm.length >= 8000 * 8, 'several seconds before it repeats');
    const steps: number[] = [];
    for (let i = 1; i < pcm.length; i++) steps.push(Math.abs(pcm[i]! - pcm[i - 1]!));
    steps.sort((a, b) => a - b);
    const wrap = Math.abs(pcm[0]! - pcm[pcm.length - 1]!);
    assert.ok(wrap <= steps[Math.floor(steps.length * 0.999)]!, `${kind}: the loop point jumps by ${wrap}`);
    const head = dbfs(pcm.subarray(0, 4000));
    const tail = dbfs(pcm.subarray(pcm.length - 4000));
    assert.ok(Math.abs(head - tail) < 6, `${kind}: ${tail} dBFS before the loop point, ${head} after`);
    assert.equal(backgroundTrack(kind), track);
    assert.deepEqual(decodeMulaw(track.mulaw).length, pcm.length);
  }
  // Seeded: the first samples are fixed (a change of generator shows up here).
  assert.notDeepEqual(backgroundTrack('cafe').pcm.subarray(0, 100), backgroundTrack('restaurant').pcm.subarray(0, 100));
});

test('each track has its character: typing in the office, clinks in the cafe, a steadier crowd in the restaurant', () => {
  const office = backgroundTrack('office').pcm;
  const cafe = backgroundTrack('cafe').pcm;
  const restaurant = backgroundTrack('restaurant').pcm;
  const hiss = backgroundTrack('static').pcm;
  assert.ok(transients(office) >= 15, `office: ${transients(office)} clicks`);
  assert.ok(transients(cafe) >= 3, `cafe: ${transients(cafe)} clinks`);
  assert.ok(transients(hiss) === 0, 'static has no events');
  const spread = (pcm: Int16Array) => {
    const levels = frameLevels(pcm);
    return levels[Math.floor(levels.length * 0.9)]! - levels[Math.floor(levels.length * 0.1)]!;
  };
  // Voices come and go: the babble's level moves; denser crowds move less; hiss hardly at all.
  assert.ok(spread(cafe) > spread(restaurant), `cafe ${spread(cafe)} dB, restaurant ${spread(restaurant)} dB`);
  assert.ok(spread(restaurant) > spread(hiss) && spread(hiss) < 2);
});

test('the mixer plays the track frame after frame from its start, wrapping round the loop', () => {
  const track = backgroundTrack('office');
  const frames = track.pcm.length / FRAME_SAMPLES;
  const mixer = new BackgroundMixer(track, frames - 2);
  const got = [mixer.fill()!, mixer.fill()!, mixer.fill()!];
  const expect = (frame: number) =>
    track.mulaw.subarray(frame * FRAME_SAMPLES, (frame + 1) * FRAME_SAMPLES) as unknown as Buffer;
  assert.deepEqual(got[0], expect(frames - 2));
  assert.deepEqual(got[1], expect(frames - 1));
  assert.deepEqual(got[2], expect(0));
  got[2]!.fill(0);
  assert.deepEqual(mixer.fill(), expect(1));
  assert.notEqual(track.mulaw[0], 0, 'frames handed out are copies: the shared track stays intact');
});

test('mixing puts the track under the agent and bends loud peaks instead of clipping', () => {
  const track = backgroundTrack('cafe');
  const agent = tone([440], 20, 6000);
  const mixed = decodeMulaw(new BackgroundMixer(track, 10).mix(encodeMulaw(agent)));
  const expected = decodeMulaw(encodeMulaw(agent)).map((s, i) => s + track.pcm[10 * FRAME_SAMPLES + i]!);
  for (let i = 0; i < FRAME_SAMPLES; i++) {
    assert.ok(Math.abs(mixed[i]! - expected[i]!) <= Math.abs(expected[i]!) / 16 + 16, `sample ${i}`);
  }
  const loud = tone([300], 20, 32767);
  const limited = decodeMulaw(new BackgroundMixer(track, 10).mix(encodeMulaw(loud)));
  for (let i = 0; i < FRAME_SAMPLES; i++) {
    if (Math.abs(loud[i]!) > 30000) assert.equal(Math.sign(limited[i]!), Math.sign(loud[i]!), `no wrap at ${i}`);
  }
});

test('none adds nothing: no background frames, agent frames pass untouched', () => {
  const mixer = backgroundMixer('none');
  assert.equal(mixer.fill(), null);
  const frame = encodeMulaw(tone([500], 20));
  assert.equal(mixer.mix(frame), frame);
  assert.equal(backgroundMixer(null).track?.kind, 'static');
});

test('on a pacer the background plays while the agent is silent and under the agent when it talks', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0 });
  const sent: Buffer[] = [];
  const track = backgroundTrack('restaurant');
  const pacer = scheduler.createPacer({ sendMedia: (f) => sent.push(f) }, { fill: new BackgroundMixer(track, 0) });
  timer.advance(100); // slots 20..100: background alone
  pacer.enqueue(toFrames(silence(60))); // the agent "speaks" silence: the background goes on unchanged
  timer.advance(60);
  pacer.enqueue(toFrames(tone([700], 40, 12000)));
  timer.advance(40);
  assert.equal(sent.length, 10);
  for (let k = 0; k < 8; k++) {
    const bg = track.mulaw.subarray(k * FRAME_SAMPLES, (k + 1) * FRAME_SAMPLES);
    assert.deepEqual(decodeMulaw(sent[k]!), decodeMulaw(bg), `frame ${k}`);
  }
  assert.ok(dbfs(decodeMulaw(sent[8]!)) > -20, 'the agent is heard over it');
});
