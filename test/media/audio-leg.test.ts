import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LegEvent } from '../../src/carriers/types.js';
import type { SttEvent, SttProvider } from '../../src/providers/stt/types.js';
import { createAudioLeg, type AudioLeg, type AudioLegSettings } from '../../src/media/audio-leg.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import { decodeMulaw, rms } from '../../src/media/audio.js';
import { endOfTurnMs, endOfTurnSilenceMs } from '../../src/media/turn-detector.js';
import { EnergyVad } from '../../src/media/vad-energy.js';
import type { Vad } from '../../src/media/vad.js';
import { ScriptedStt, ToneTts, createMediaPair, pause, voice, type FarEnd } from '../../src/testing/audio-fakes.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';
import { DeepgramStt } from '../../src/providers/stt/deepgram.js';

/** The energy VAD answering a tick later, as Silero does (its windows are scored off the frame's turn). */
function asyncVad(): Vad {
  const inner = new EnergyVad();
  return {
    name: 'async-energy',
    process: (frame) => {
      const score = inner.process(frame);
      return new Promise((resolve) => setImmediate(() => resolve(score)));
    },
    reset: () => inner.reset(),
  };
}

const scheduler = new FrameScheduler();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-audio-leg-'));
after(() => {
  scheduler.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function setup(
  options: {
    threshold?: number;
    lines?: string[];
    record?: boolean;
    playoutMs?: number;
    echoMarks?: boolean;
    msPerChar?: number;
    vad?: Vad | Promise<Vad>;
  } = {},
) {
  const { transport, far } = createMediaPair({
    playoutMs: options.playoutMs ?? 0,
    ...(options.echoMarks === false && { echoMarks: false }),
  });
  const stt = new ScriptedStt({ lines: options.lines ?? ['hello there'] });
  const tts = new ToneTts({ msPerChar: options.msPerChar ?? 15 });
  const settings: AudioLegSettings = {
    callId: `call-${Math.random().toString(36).slice(2)}`,
    interruptionThreshold: options.threshold ?? 100,
    language: 'en-US',
    keywords: ['Openline:2'],
    voice: 'test-voice',
    pronunciationGuide: [{ word: 'SQL', pronunciation: 'sequel', case_sensitive: true, spaced: true }],
    backgroundTrack: 'none',
    record: options.record ?? false,
  };
  const leg = createAudioLeg(transport, settings, {
    stt,
    tts,
    vad: options.vad ?? new EnergyVad(),
    scheduler,
    dataDir,
  });
  const events: LegEvent[] = [];
  leg.on((event) => events.push(event));
  // A line opens with a moment of quiet before anyone speaks (the VAD learns the noise floor).
  far.sendPcm(pause(300));
  return { leg, far, stt, tts, events, settings };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

async function until(what: string, check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Feeds `pcm` frame by frame; returns the index of the frame after which `stop` first held, or -1. */
function feedUntil(far: FarEnd, pcm: Int16Array, stop: () => boolean): number {
  const frames = Math.ceil(pcm.length / 160);
  for (let i = 0; i < frames; i++) {
    far.sendPcm(pcm.subarray(i * 160, (i + 1) * 160));
    if (stop()) return i;
  }
  return -1;
}

describe('audio leg: inbound turn-taking', () => {
  for (const threshold of [50, 100, 200]) {
    it(`ends the turn after the trailing silence of interruption_threshold ${threshold}`, async () => {
      const { leg, far, stt, events } = setup({ threshold, lines: ['I would like to book a table'] });
      await tick();
      far.sendPcm(voice(600));
      assert.equal(events.filter((e) => e.type === 'speech_start').length, 1);
      assert.ok(
        events.some((e) => e.type === 'speech_partial'),
        'interim transcripts while speaking',
      );
      // The recogniser is asked to settle its words once the voice has stopped for 200 ms (or at
      // the end of the turn, if that comes first); the turn ends with the threshold's silence.
      const asked = feedUntil(far, pause(200), () => stt.finalizes > 0) + 1;
      assert.equal(asked, Math.min(10, Math.ceil(endOfTurnMs(threshold) / 20)));
      const turnEnded = () => events.some((e) => e.type === 'speech');
      await until('the early final', () =>
        events.some((e) => turnEnded() || (e.type === 'speech_partial' && /table$/.test(e.text))),
      );
      const ended = turnEnded() ? asked : asked + feedUntil(far, pause(3000), turnEnded) + 1;
      assert.equal(ended, Math.ceil(endOfTurnMs(threshold) / 20));
      const speech = events.find((e) => e.type === 'speech');
      assert.ok(speech?.type === 'speech');
      assert.equal(speech.text, 'I would like to book a table');
      assert.equal(speech.durationMs, 600);
      await leg.hangup();
    });
  }

  it('an asynchronous VAD, still loading at first, gives the same turn with no frame lost', async () => {
    const loading = new Promise<Vad>((resolve) => setTimeout(() => resolve(asyncVad()), 30));
    const { leg, far, events } = setup({ threshold: 100, lines: ['the same words'], vad: loading });
    far.sendPcm(voice(600));
    far.sendPcm(pause(1000));
    await until('the turn', () => events.some((e) => e.type === 'speech'));
    // The voice stopped (speech_paused, 200 ms in), then the turn ended.
    assert.deepEqual(
      events.filter((e) => e.type !== 'speech_partial').map((e) => e.type),
      ['speech_start', 'speech_paused', 'speech'],
    );
    const speech = events.find((e) => e.type === 'speech');
    assert.ok(speech?.type === 'speech');
    assert.equal(speech.text, 'the same words');
    assert.equal(speech.durationMs, 600);
    // Every frame queued behind the loading model is scored in the end.
    await until('the VAD to catch up', () => leg.backlog === 0);
    await leg.hangup();
  });

  it('a VAD that falls more than a second behind has frames skipped, not an ever longer backlog', async () => {
    const waiting: (() => void)[] = [];
    const stuck: Vad = {
      name: 'stuck',
      process: () => new Promise<number>((resolve) => waiting.push(() => resolve(0))),
      reset() {},
    };
    const { leg, far } = setup({ vad: stuck });
    // setup() already sent 15 frames of line quiet: one is being scored, 14 wait.
    far.sendPcm(pause(1700));
    assert.equal(leg.backlog, 14 + 85);
    assert.equal(leg.skippedFrames, 14 + 85 - 50);
    while (waiting.length > 0 || leg.backlog > 0) {
      waiting.shift()?.();
      await tick();
    }
    assert.equal(leg.backlog, 0);
    await leg.hangup();
  });

  it('keeps the turn open through a pause shorter than the trailing silence', async () => {
    const { leg, far, events } = setup({ threshold: 100, lines: ['one long sentence with a pause'] });
    await tick();
    far.sendPcm(voice(400));
    far.sendPcm(pause(endOfTurnMs(100) - 100));
    far.sendPcm(voice(400));
    assert.ok(!events.some((e) => e.type === 'speech'));
    far.sendPcm(pause(1000));
    await until('the turn', () => events.some((e) => e.type === 'speech'));
    assert.equal(events.filter((e) => e.type === 'speech_start').length, 1);
    const speech = events.find((e) => e.type === 'speech');
    assert.ok(speech?.type === 'speech' && speech.durationMs === 400 + endOfTurnMs(100) - 100 + 400);
    await leg.hangup();
  });

  for (const opening of [false, true]) {
    it(`ends a turn whose words read as a finished sentence after ${opening ? "the threshold's silence while the far end opens the call" : 'a shorter silence once the agent has spoken'}`, async () => {
      const { leg, far, stt, events } = setup({ threshold: 100, lines: ['I would like to book a table.'] });
      await tick();
      if (!opening) await leg.speak('How can I help?');
      far.sendPcm(voice(600));
      const asked = feedUntil(far, pause(200), () => stt.finalizes > 0) + 1;
      await until('the early final', () => events.some((e) => e.type === 'speech_partial' && /table\.$/.test(e.text)));
      const turnEnded = () => events.some((e) => e.type === 'speech');
      const ended = asked + feedUntil(far, pause(1000), turnEnded) + 1;
      // 240 ms (0.6 of the threshold's 400 ms) in an answer; 400 while the far end is still opening.
      assert.equal(ended, Math.ceil(endOfTurnSilenceMs(100, 'finished', opening) / 20));
      assert.equal(ended * 20 < endOfTurnMs(100), !opening);
      const speech = events.find((e) => e.type === 'speech');
      assert.ok(speech?.type === 'speech' && speech.text === 'I would like to book a table.');
      await leg.hangup();
    });
  }

  /** A turn ended early by a closed sentence, after the agent spoke; returns the frames fed since its last voice. */
  async function endedEarly(opts: Parameters<typeof setup>[0] = {}) {
    const t = setup({ threshold: 100, lines: ['I would like to book a table.'], ...opts });
    await tick();
    await t.leg.speak('How can I help?');
    t.far.sendPcm(voice(600));
    const asked = feedUntil(t.far, pause(200), () => t.stt.finalizes > 0) + 1;
    await until('the early final', () => t.events.some((e) => e.type === 'speech_partial' && /table\.$/.test(e.text)));
    const silent = asked + feedUntil(t.far, pause(1000), () => t.events.some((e) => e.type === 'speech')) + 1;
    assert.ok(silent * 20 < endOfTurnMs(100));
    return { ...t, silent };
  }
  const voiced = (frames: Buffer[]) => frames.filter((f) => rms(decodeMulaw(f)) > 300).length;

  it("does not let the reply to a turn ended early be heard before the threshold's silence", async () => {
    const { leg, far, silent } = await endedEarly();
    const before = far.received.length;
    const reply = leg.speak('Sure, for when?');
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(voiced(far.received.slice(before)), 0, 'nothing heard before 400 ms of silence');
    far.sendPcm(pause(endOfTurnMs(100) - silent * 20));
    await until('the reply heard', () => voiced(far.received.slice(before)) > 0);
    assert.deepEqual(await reply, { played: 'Sure, for when?', interrupted: false });
    await leg.hangup();
  });

  it('holds the reply to a turn ended early for a caller who goes on before it is heard', async () => {
    const { leg, far, events } = await endedEarly();
    const before = far.received.length;
    const controller = new AbortController();
    const reply = leg.speak('Sure, for when?', { signal: controller.signal });
    far.sendPcm(voice(300));
    await until('their voice again', () => events.filter((e) => e.type === 'speech_start').length === 2);
    far.sendPcm(pause(300));
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(voiced(far.received.slice(before)), 0, 'nothing heard over their next sentence');
    // What the session does on their words: hold, then cut the reply nobody heard.
    leg.pause();
    controller.abort();
    assert.deepEqual(await reply, { played: '', interrupted: true });
    const figures = leg.latency.report().interruptions;
    assert.equal(figures.held, 1);
    assert.equal(figures.silent_ms_p50, 0);
    await leg.hangup();
  });

  it('speaks the next utterance after one that played to its end while held (a voice came over its last frames)', async () => {
    const { leg, far } = setup({ playoutMs: 300 });
    await tick();
    const first = leg.speak('Hi.');
    await until('its last frames out', () => far.marks.some((name) => name.endsWith(':end')));
    // The session holds the agent: a voice started as its last words were playing.
    leg.pause();
    assert.deepEqual(await first, { played: 'Hi.', interrupted: false });
    const before = far.received.length;
    const next = leg.speak('Go on.');
    await until('the next utterance heard', () => voiced(far.received.slice(before)) > 0);
    assert.deepEqual(await next, { played: 'Go on.', interrupted: false });
    await leg.hangup();
  });

  it('keeps a turn whose words end open ("... a table for") through a pause longer than the threshold', async () => {
    const { leg, far, stt, events } = setup({ threshold: 100, lines: ['I would like to book a table for'] });
    await tick();
    far.sendPcm(voice(600));
    feedUntil(far, pause(200), () => stt.finalizes > 0);
    await until('the early final', () => events.some((e) => e.type === 'speech_partial' && /for$/.test(e.text)));
    // 600 ms of silence in all: today's rule would have ended the turn at 400.
    far.sendPcm(pause(400));
    await tick();
    assert.ok(!events.some((e) => e.type === 'speech'), 'no end of turn in the pause');
    far.sendPcm(voice(400));
    far.sendPcm(pause(1000));
    await until('the turn', () => events.some((e) => e.type === 'speech'));
    assert.equal(events.filter((e) => e.type === 'speech').length, 1);
    assert.equal(events.filter((e) => e.type === 'speech_start').length, 1);
    await leg.hangup();
  });

  it('passes language and keywords to the STT, carrier DTMF as dtmf, and stop as hangup', async () => {
    const { far, stt, events } = setup();
    await tick();
    assert.deepEqual(stt.opened[0], {
      language: 'en-US',
      keywords: ['Openline:2'],
      encoding: 'mulaw',
      sampleRate: 8000,
    });
    far.dtmf('5');
    far.hangup();
    assert.deepEqual(
      events.map((e) => e.type),
      ['dtmf', 'hangup'],
    );
    assert.ok(events[0]?.type === 'dtmf' && events[0].digit === '5');
  });
});

describe('audio leg: outbound speech', () => {
  it('plays the whole text, applying the pronunciation guide, and resolves when the last mark returns', async () => {
    const { leg, far, tts } = setup();
    const result = await leg.speak('We use SQL here.');
    assert.deepEqual(result, { played: 'We use SQL here.', interrupted: false });
    assert.equal(tts.requests[0]?.text, 'We use sequel here.');
    assert.equal(tts.requests[0]?.voice, 'test-voice');
    assert.ok(far.received.length > 10, 'frames were sent');
    assert.ok(far.received.every((f) => f.length === 160));
    assert.deepEqual(
      far.marks.filter((m) => m.startsWith('s1:')),
      ['s1:0', 's1:1', 's1:2', 's1:3', 's1:end'],
    );
    await leg.hangup();
    assert.equal(far.closed, true);
  });

  it('an utterance whose end mark the carrier never echoes counts as said a few seconds after it went out', async () => {
    const { leg, far } = setup({ echoMarks: false });
    const result = await leg.speak('We use SQL here.');
    assert.deepEqual(result, { played: 'We use SQL here.', interrupted: false });
    assert.deepEqual(far.echoed, []);
    await leg.hangup();
  });

  it('a streamed reply is synthesised sentence by sentence as it comes, its word marks in one sequence', async () => {
    const { leg, far, tts } = setup();
    let release!: () => void;
    const rest = new Promise<void>((resolve) => (release = resolve));
    async function* reply(): AsyncGenerator<string> {
      yield 'Sure thing. ';
      await rest;
      yield 'The shop opens at nine.';
    }
    const speaking = leg.speak(reply());
    // The first sentence plays while the rest is still being written.
    await until('the first sentence played', () => far.echoed.includes('s1:1'));
    assert.deepEqual(
      tts.requests.map((r) => r.text),
      ['Sure thing.'],
    );
    release();
    const result = await speaking;
    assert.deepEqual(result, { played: 'Sure thing. The shop opens at nine.', interrupted: false });
    assert.deepEqual(
      tts.requests.map((r) => r.text),
      ['Sure thing.', 'The shop opens at nine.'],
    );
    assert.deepEqual(
      far.marks.filter((m) => m.startsWith('s1:')),
      ['s1:0', 's1:1', 's1:2', 's1:3', 's1:4', 's1:5', 's1:6', 's1:end'],
    );
    await leg.hangup();
  });

  it('a failing text-to-speech provider is reported, and the turn still ends', async () => {
    const { transport } = createMediaPair({ playoutMs: 0 });
    const failures: string[] = [];
    const leg = createAudioLeg(
      transport,
      {
        callId: 'call-tts-fails',
        interruptionThreshold: 100,
        language: 'en-US',
        keywords: [],
        voice: 'v',
        pronunciationGuide: [],
        backgroundTrack: 'none',
        record: false,
      },
      {
        stt: new ScriptedStt({ lines: [] }),
        tts: {
          name: 'broken',
          // eslint-disable-next-line require-yield
          async *synthesize() {
            throw new Error('503 from the vendor');
          },
        },
        vad: new EnergyVad(),
        scheduler,
        onProviderError: (kind) => failures.push(kind),
      },
    );
    const result = await leg.speak('Hello there.');
    assert.equal(result.interrupted, false);
    assert.deepEqual(failures, ['tts']);
    await leg.hangup();
  });

  it('barge-in stops synthesis, sends clear and keeps only the words whose marks came back', async () => {
    const { leg, far } = setup({ playoutMs: 40, msPerChar: 30 });
    const text = 'one two three four five six seven eight nine ten eleven twelve';
    const controller = new AbortController();
    const speaking = leg.speak(text, { signal: controller.signal });
    await until('three words played', () => far.echoed.filter((m) => /^s1:\d+$/.test(m)).length >= 3);
    const echoedAtAbort = far.echoed.filter((m) => /^s1:\d+$/.test(m)).length;
    const sentAtAbort = far.received.length;
    controller.abort();
    const result = await speaking;
    assert.equal(result.interrupted, true);
    assert.equal(far.clears, 1);
    const words = text.split(' ');
    assert.equal(result.played, words.slice(0, echoedAtAbort).join(' '));
    assert.ok(echoedAtAbort < words.length, 'cut before the end');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(far.received.length, sentAtAbort, 'nothing more was sent after the clear');
    await leg.hangup();
  });

  it('a hangup while speaking settles speak as interrupted', async () => {
    const { leg, far } = setup({ msPerChar: 30 });
    const speaking = leg.speak('this sentence will never finish playing out');
    await until('a frame', () => far.received.length > 0);
    far.hangup();
    const result = await speaking;
    assert.equal(result.interrupted, true);
    assert.notEqual(result.played, 'this sentence will never finish playing out');
  });
});

describe('audio leg: recording and latency', () => {
  it('records both tracks of a record=true call as a stereo WAV under DATA_DIR/recordings', async () => {
    const { leg, far, settings } = setup({ record: true });
    await tick();
    far.sendPcm(voice(400));
    await leg.speak('hello from the agent');
    await leg.hangup();
    const relative = await (leg as AudioLeg).recording();
    assert.equal(relative, path.join('recordings', `${settings.callId}.wav`));
    const file = fs.readFileSync(path.join(dataDir, relative!));
    assert.equal(file.toString('ascii', 0, 4), 'RIFF');
    assert.equal(file.toString('ascii', 8, 12), 'WAVE');
    assert.equal(file.readUInt16LE(22), 2, 'stereo');
    assert.equal(file.readUInt32LE(24), 8000);
    const samples = new Int16Array(file.buffer, file.byteOffset + 44, (file.length - 44) >> 1);
    let left = 0;
    let right = 0;
    for (let i = 0; i + 1 < samples.length; i += 2) {
      left = Math.max(left, Math.abs(samples[i]!));
      right = Math.max(right, Math.abs(samples[i + 1]!));
    }
    assert.ok(left > 1000, 'the caller is on the left track');
    assert.ok(right > 1000, 'the agent is on the right track');
  });

  it('measures a turn: end of speech, STT final, reply, first audio and first frame in order', async () => {
    const { leg, far, events } = setup({ lines: ['what time is it'] });
    const turns: unknown[] = [];
    leg.latency.onTurn((entry) => turns.push(entry));
    await tick();
    far.sendPcm(voice(500));
    far.sendPcm(pause(1000));
    await until('the turn', () => events.some((e) => e.type === 'speech'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    leg.latency.replyReady();
    await leg.speak('It is noon.');
    const report = leg.latency.report();
    assert.equal(report.turns.length, 1);
    assert.equal(turns.length, 1);
    const t = report.turns[0]!;
    assert.equal(t.turn, 1);
    for (const key of ['stt_ms', 'turn_ms', 'llm_ms', 'tts_ms', 'send_ms', 'total_ms'] as const) {
      assert.ok(typeof t[key] === 'number' && t[key] >= 0, `${key} is a duration`);
    }
    assert.ok(t.llm_ms >= 15, 'the reply came after the pause');
    assert.equal(t.llm_first_token_ms, null, 'no language model answered: no first token');
    assert.equal(report.summary.llm_first_token_ms_p50, null);
    assert.ok(
      Math.abs(t.turn_ms + t.llm_ms + t.tts_ms + t.send_ms - t.total_ms) < 0.5,
      'the parts add up to the whole',
    );
    assert.ok(t.turn_ms >= (t.stt_ms ?? 0));
    assert.equal(report.summary.turns, 1);
    assert.equal(report.summary.total_ms_p50, t.total_ms);
    await leg.hangup();
  });
});

/** An audio leg that listens with Deepgram (its loopback fake). */
function deepgramLeg(fake: FakeDeepgram) {
  const { transport, far } = createMediaPair({ playoutMs: 0 });
  const leg = createAudioLeg(
    transport,
    {
      callId: 'call-deepgram',
      interruptionThreshold: 100,
      language: 'en-US',
      keywords: [],
      voice: 'test-voice',
      pronunciationGuide: [],
      backgroundTrack: 'none',
      record: false,
    },
    {
      stt: new DeepgramStt({ apiKey: fake.apiKey, baseUrl: fake.url, endpointingMs: 300 }),
      tts: new ToneTts({ msPerChar: 15 }),
      vad: new EnergyVad(),
      scheduler,
    },
  );
  const events: LegEvent[] = [];
  leg.on((event) => events.push(event));
  return { leg, far, events };
}

describe('audio leg: a recogniser that fails', () => {
  it('a stream refused for now (429, 503) is asked for again after the wait it named, and the caller is heard', async () => {
    const fake = await FakeDeepgram.start({ transcripts: ['can you hear me'] });
    try {
      fake.refuseNext({ status: 429, retryAfterS: 0.2 });
      const { leg, far, events } = deepgramLeg(fake);
      far.sendPcm(pause(300));
      far.sendPcm(voice(1000));
      // The audio sent while the stream was refused reaches the stream opened after the wait.
      await until(
        'every word heard',
        () => events.some((e) => e.type === 'speech_partial' && e.text === 'can you hear me'),
        10_000,
      );
      far.sendPcm(pause(1500));
      await until('the turn', () => events.some((e) => e.type === 'speech'), 10_000);
      const speech = events.find((e) => e.type === 'speech');
      assert.ok(speech?.type === 'speech');
      assert.equal(speech.text, 'can you hear me');
      assert.deepEqual(
        fake.refusals.map((r) => r.status),
        [429],
      );
      assert.equal(fake.connections.length, 1);
      assert.ok(!events.some((e) => e.type === 'provider_failed'));
      await leg.hangup();
    } finally {
      await fake.close();
    }
  });

  it('a stream that breaks mid-utterance: the new one hears again what it had not settled, no word of the turn is lost', async () => {
    // The recogniser gives a final only the words its audio lasted for (100 ms a word).
    const fake = await FakeDeepgram.start({
      wordMs: 100,
      wordsAsHeard: true,
      transcripts: ['one two three four five six seven eight', 'one two three four five six seven eight'],
    });
    try {
      const { leg, far, events } = deepgramLeg(fake);
      await until('the stream', () => fake.connections.length === 1 && fake.connections[0]!.bytes === 0, 10_000);
      far.sendPcm(pause(300));
      far.sendPcm(voice(500));
      await until(
        'five words heard',
        () => events.some((e) => e.type === 'speech_partial' && /five$/.test(e.text)),
        10_000,
      );
      fake.dropAll(1011, 'NET-0000');
      await until('the second stream', () => fake.connections.length === 2, 10_000);
      far.sendPcm(voice(300));
      far.sendPcm(pause(1500));
      await until('the turn', () => events.some((e) => e.type === 'speech'), 10_000);
      const speech = events.find((e) => e.type === 'speech');
      assert.ok(speech?.type === 'speech');
      assert.equal(speech.text, 'one two three four five six seven eight');
      await leg.hangup();
    } finally {
      await fake.close();
    }
  });
});

describe('audio leg: a recogniser that breaks now and then over a long call', () => {
  it('is opened again after each break a minute or more after the last; two breaks within a minute are final', async () => {
    let nowMs = Date.parse('2025-01-01T00:00:00Z');
    const streams: Set<(event: SttEvent) => void>[] = [];
    const stt: SttProvider = {
      name: 'vendor-stt',
      open() {
        const listeners = new Set<(event: SttEvent) => void>();
        streams.push(listeners);
        return Promise.resolve({
          on: (listener) => (listeners.add(listener), () => listeners.delete(listener)),
          write: () => undefined,
          finalize: () => undefined,
          close: () => Promise.resolve(),
        });
      },
    };
    const breakStream = (i: number) =>
      [...(streams[i] ?? [])].forEach((l) => l({ type: 'error', message: 'socket closed' }));
    const { transport } = createMediaPair({ playoutMs: 0 });
    const leg = createAudioLeg(
      transport,
      {
        callId: 'call-long',
        interruptionThreshold: 100,
        language: 'en-US',
        keywords: [],
        voice: 'test-voice',
        pronunciationGuide: [],
        backgroundTrack: 'none',
        record: false,
      },
      { stt, tts: new ToneTts(), vad: new EnergyVad(), scheduler, now: () => new Date(nowMs) },
    );
    const events: LegEvent[] = [];
    leg.on((event) => events.push(event));
    await until('the first stream', () => (streams[0]?.size ?? 0) > 0);
    breakStream(0);
    await until('the second stream', () => (streams[1]?.size ?? 0) > 0);
    nowMs += 61_000;
    breakStream(1);
    await until('the third stream', () => (streams[2]?.size ?? 0) > 0);
    assert.ok(!events.some((e) => e.type === 'provider_failed'));
    nowMs += 10_000;
    breakStream(2);
    await until('the failure', () => events.some((e) => e.type === 'provider_failed'));
    assert.equal(streams.length, 3);
    await leg.hangup();
  });
});
