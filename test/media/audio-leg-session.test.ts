import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CallSession, CANNOT_HEAR_LINE } from '../../src/calls/session.js';
import { systemClock, type Clock } from '../../src/clock.js';
import { OfflineAgent } from '../../src/agent/offline.js';
import type { Agent, AgentReply, Turn } from '../../src/agent/types.js';
import { audioLegSettings, createAudioLeg } from '../../src/media/audio-leg.js';
import { decodeMulaw, rms } from '../../src/media/audio.js';
import { DtmfDetector } from '../../src/media/dtmf.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import { EnergyVad } from '../../src/media/vad-energy.js';
import { ScriptedStt, ToneTts, createMediaPair, voice } from '../../src/testing/audio-fakes.js';
import { callRequest } from '../../src/testing/call-request.js';
import type { SttEvent, SttProvider } from '../../src/providers/stt/types.js';
import type { TtsProvider } from '../../src/providers/tts/types.js';

const scheduler = new FrameScheduler();
after(() => scheduler.stop());

async function until(what: string, check: () => boolean, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Says `reply` to the call's start, then whatever `heard` maps to. */
function scriptedAgent(
  start: string,
  heard: (text: string) => AgentReply = () => ({ say: null, action: null }),
): Agent {
  return {
    label: 'scripted',
    respond: (input) =>
      Promise.resolve(
        input.kind === 'start'
          ? { say: start, action: null }
          : input.kind === 'heard'
            ? heard(input.text)
            : { say: null, action: null },
      ),
  };
}

function call(options: {
  agent: Agent;
  lines: string[];
  msPerChar?: number;
  playoutMs?: number;
  clock?: Clock;
  stt?: SttProvider;
  tts?: TtsProvider;
  fallbackTts?: TtsProvider;
  blockInterruptions?: boolean;
}) {
  const request = callRequest({
    task: 'Confirm the dental appointment for Tuesday at 3 pm.',
    block_interruptions: options.blockInterruptions ?? false,
  });
  const { transport, far } = createMediaPair({ playoutMs: options.playoutMs ?? 0 });
  const stt = new ScriptedStt({ lines: options.lines });
  const leg = createAudioLeg(transport, audioLegSettings('call-1', request, 'test-voice'), {
    stt: options.stt ?? stt,
    tts: options.tts ?? new ToneTts({ msPerChar: options.msPerChar ?? 10 }),
    vad: new EnergyVad(),
    scheduler,
    ...(options.fallbackTts && { fallbackTts: { tts: options.fallbackTts, voice: 'local' } }),
  });
  const transcript: Turn[] = [];
  const controller = new AbortController();
  const session = new CallSession({
    callId: 'call-1',
    request,
    inbound: false,
    variables: {},
    leg,
    agent: options.agent,
    clock: options.clock ?? systemClock,
    recorder: { transcript: (turn) => Promise.resolve(void transcript.push(turn)) },
    signal: controller.signal,
    onReply: () => leg.latency.replyReady(),
  });
  const outcome = session.run();
  far.startStreaming();
  return { leg, far, stt, transcript, outcome, controller };
}

/** The caller says something (in real time, on the streaming line). */
function say(far: ReturnType<typeof createMediaPair>['far'], ms: number): void {
  far.talk(voice(ms));
}

describe('audio leg under a call session', () => {
  it('runs a whole call with the offline agent: greeting, answers, goodbye, latency per turn', async () => {
    const { leg, far, transcript, outcome } = call({
      agent: new OfflineAgent(),
      lines: ['who is this', 'yes that works for me, thank you'],
    });
    await until('the greeting', () => far.echoed.includes('s1:end'));
    say(far, 500);
    await until('the second answer', () => far.echoed.includes('s2:end'));
    say(far, 700);
    const result = await outcome;
    assert.equal(result.endedBy, 'ASSISTANT');
    assert.deepEqual(
      transcript.filter((t) => t.role !== 'agent-action').map((t) => t.role),
      ['assistant', 'user', 'assistant', 'user', 'assistant'],
    );
    assert.equal(transcript[1]?.text, 'who is this');
    assert.match(transcript.at(-1)?.text ?? '', /Goodbye!$/);
    assert.equal(far.closed, true, 'the agent hung up');
    const report = leg.latency.report();
    assert.equal(report.turns.length, 2);
    assert.deepEqual(
      report.turns.map((t) => t.turn),
      [1, 2],
    );
    for (const t of report.turns) assert.ok(t.total_ms >= t.turn_ms && t.turn_ms >= 0 && t.llm_ms >= 0);
  });

  it('answers a finished turn at once, not a timer turn later (0 ms timers are never used for it)', async () => {
    // A clock whose 0 ms timers never fire: under load a 0 ms timer waits behind every queued I/O callback.
    const zeroTimers: number[] = [];
    const clock: Clock = {
      now: () => systemClock.now(),
      sleep: (ms, signal) => systemClock.sleep(ms, signal),
      setTimer: (fn, ms) => (ms <= 0 ? (zeroTimers.push(ms), () => undefined) : systemClock.setTimer(fn, ms)),
      scale: 1,
    };
    const heard: string[] = [];
    const { far, controller, outcome } = call({
      agent: scriptedAgent('Hello, this is the clinic.', (text) => {
        heard.push(text);
        return { say: 'Tuesday at three works.', action: null };
      }),
      lines: ['is tuesday free'],
      clock,
    });
    try {
      await until('the greeting', () => far.echoed.includes('s1:end'));
      say(far, 500);
      await until('the answer', () => far.echoed.includes('s2:end'));
      assert.deepEqual(heard, ['is tuesday free']);
      assert.deepEqual(zeroTimers, []);
    } finally {
      controller.abort();
      await outcome;
    }
  });

  it('a backchannel over the agent does not interrupt it', async () => {
    const long = 'Let me read you the whole list of available appointment times for next week, slowly.';
    const { far, transcript, controller, outcome } = call({
      agent: scriptedAgent(long),
      lines: ['uh huh'],
      msPerChar: 25,
    });
    await until('the agent speaking', () => far.echoed.includes('s1:3'));
    say(far, 500);
    await until('the sentence played', () => far.echoed.includes('s1:end'), 10_000);
    assert.equal(far.clears, 0);
    await until('the transcript', () => transcript.some((t) => t.role === 'assistant'));
    assert.equal(transcript.find((t) => t.role === 'assistant')?.text, long);
    controller.abort();
    await outcome;
  });

  it('a voice over the agent pauses it at once; after a backchannel it goes on from the same frame, nothing repeated or skipped', async () => {
    const long = 'Let me read you the whole list of available appointment times for next week, slowly.';
    /** The agent's voiced frames as the carrier got them, and when. */
    const run = async (caller: boolean) => {
      const { leg, far, transcript, controller, outcome } = call({
        agent: scriptedAgent(long),
        lines: ['uh huh'],
        msPerChar: 25,
      });
      const frames: { at: number; frame: Buffer }[] = [];
      far.onFrame((frame) => {
        // A copy: frames are carved from reused memory.
        if (rms(decodeMulaw(frame)) > 200) frames.push({ at: performance.now(), frame: Buffer.from(frame) });
      });
      await until('the agent speaking', () => far.echoed.includes('s1:3'));
      const onset = performance.now();
      if (caller) say(far, 500);
      await until('the sentence played', () => far.echoed.includes('s1:end'), 15_000);
      await until('the transcript', () => transcript.some((t) => t.role === 'assistant'));
      const said = transcript.find((t) => t.role === 'assistant')?.text;
      controller.abort();
      await outcome;
      return { frames, onset, said, clears: far.clears, figures: leg.latency.report().interruptions };
    };
    const plain = await run(false);
    const heldUp = await run(true);
    // The same audio, frame for frame: held, then resumed where it stopped.
    assert.equal(heldUp.frames.length, plain.frames.length);
    // (Frame for frame the same tones; the line's comfort noise differs from run to run.)
    const apart = (a: Buffer, b: Buffer) => {
      const x = decodeMulaw(a);
      const y = decodeMulaw(b);
      let sum = 0;
      for (let i = 0; i < x.length; i++) sum += Math.abs(x[i]! - y[i]!);
      return sum / x.length;
    };
    const differs = heldUp.frames.findIndex((f, i) => apart(f.frame, plain.frames[i]!.frame) > 400);
    assert.equal(differs, -1, `the agent's audio differs from frame ${differs} of ${plain.frames.length}`);
    assert.equal(heldUp.said, long);
    assert.equal(heldUp.clears, 0);
    // The call's figures: held once, resumed once.
    assert.equal(plain.figures.held, 0);
    assert.deepEqual([heldUp.figures.held, heldUp.figures.resumed, heldUp.figures.cut], [1, 1, 0]);
    assert.ok((heldUp.figures.silent_ms_p50 ?? 0) > 0);
    // A pause while the caller spoke: the longest gap between voiced frames after the onset is
    // far longer than any in the uninterrupted sentence (the words' own gaps).
    const longestGap = (frames: { at: number }[], from: number) => {
      let longest = 0;
      for (let i = 1; i < frames.length; i++)
        if (frames[i]!.at > from) longest = Math.max(longest, frames[i]!.at - frames[i - 1]!.at);
      return longest;
    };
    const gap = longestGap(heldUp.frames, heldUp.onset);
    assert.ok(gap > longestGap(plain.frames, plain.onset) + 300, `held for ${gap.toFixed(0)} ms`);
  });

  it('words over the agent interrupt it: clear is sent and the transcript ends where the caller cut in', async () => {
    const long = 'Let me read you the whole list of available appointment times for next week, slowly.';
    const { leg, far, transcript, controller, outcome } = call({
      agent: scriptedAgent(long),
      lines: ['wait wait I have a question'],
      msPerChar: 25,
      playoutMs: 40,
    });
    await until('the agent speaking', () => far.echoed.includes('s1:3'));
    say(far, 800);
    await until('the clear', () => far.clears === 1);
    await until('the transcript', () => transcript.some((t) => t.role === 'assistant'));
    const said = transcript.find((t) => t.role === 'assistant')?.text ?? '';
    assert.match(said, /\.\.\.$/);
    assert.ok(long.startsWith(said.slice(0, -3)), 'a prefix of what it was saying');
    assert.ok(said.length < long.length);
    assert.ok(!far.echoed.includes('s1:end'));
    const figures = leg.latency.report().interruptions;
    assert.deepEqual([figures.held, figures.resumed, figures.cut], [1, 0, 1]);
    controller.abort();
    await outcome;
  });

  it('with block_interruptions the agent plays its sentence whole over words that would interrupt it', async () => {
    const long = 'Let me read you the whole list of available appointment times for next week, slowly.';
    const { leg, far, transcript, controller, outcome } = call({
      agent: scriptedAgent(long),
      lines: ['wait wait I have a question'],
      msPerChar: 25,
      playoutMs: 40,
      blockInterruptions: true,
    });
    await until('the agent speaking', () => far.echoed.includes('s1:3'));
    say(far, 800);
    await until('the sentence played', () => far.echoed.includes('s1:end'), 15_000);
    await until('the transcript', () => transcript.some((t) => t.role === 'assistant'));
    assert.equal(transcript.find((t) => t.role === 'assistant')?.text, long);
    assert.equal(far.clears, 0);
    const figures = leg.latency.report().interruptions;
    assert.deepEqual([figures.held, figures.cut], [0, 0]);
    // What the caller said over it is heard all the same.
    await until('their words', () => transcript.some((t) => t.role === 'user'));
    controller.abort();
    await outcome;
  });

  it('a caller hanging up while the agent speaks: what they heard of it is in the transcript', async () => {
    const long = 'Let me read you the whole list of available appointment times for next week, slowly.';
    const { far, transcript, outcome } = call({ agent: scriptedAgent(long), lines: [], msPerChar: 25 });
    await until('the agent speaking', () => far.echoed.includes('s1:3'));
    far.hangup();
    const ended = await outcome;
    assert.equal(ended.endedBy, 'USER');
    const said = transcript.find((t) => t.role === 'assistant')?.text ?? '';
    assert.match(said, /\.\.\.$/);
    assert.ok(long.startsWith(said.slice(0, -3)) && said.length > 10, said);
  });

  it('presses buttons as in-band DTMF tones the far end can detect', async () => {
    const agent: Agent = {
      label: 'scripted',
      respond: (input) =>
        Promise.resolve(
          input.kind === 'start'
            ? { say: null, action: { type: 'press_buttons', digits: '12#' } }
            : { say: null, action: null },
        ),
    };
    const { far, transcript, controller, outcome } = call({ agent, lines: [] });
    const detector = new DtmfDetector();
    let heard = '';
    far.onFrame((frame) => (heard += detector.push(decodeMulaw(frame))));
    await until('the tones', () => heard.length >= 3);
    assert.equal(heard, '12#');
    assert.ok(transcript.some((t) => t.text === 'Pressed buttons: 12#'));
    controller.abort();
    await outcome;
  });

  describe('a speech provider that fails for good', () => {
    /** A voice that fails every sentence (its retries spent), counting the sentences asked of it. */
    function brokenVoice(): TtsProvider & { asked: number } {
      const voice = {
        name: 'vendor-voice',
        asked: 0,
        // eslint-disable-next-line require-yield
        async *synthesize() {
          voice.asked++;
          throw new Error('503 Service Unavailable');
        },
      };
      return voice;
    }

    /** A recogniser whose streams break when told, and that cannot be opened after `opens` streams. */
    function breakingRecogniser(opens: number) {
      const streams: Set<(event: SttEvent) => void>[] = [];
      const provider: SttProvider = {
        name: 'vendor-stt',
        open() {
          if (streams.length >= opens) return Promise.reject(new Error('connection refused'));
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
      /** Whether stream `i` is open and listened to. */
      const listened = (i: number) => (streams[i]?.size ?? 0) > 0;
      const breakStream = (i: number) =>
        [...(streams[i] ?? [])].forEach((l) => l({ type: 'error', message: 'socket closed' }));
      return { provider, streams, listened, breakStream };
    }

    it('the voice failing with no fallback ends the call at once with a clean error_message', async () => {
      const tts = brokenVoice();
      const { far, transcript, outcome } = call({ agent: new OfflineAgent(), lines: [], tts });
      const result = await outcome;
      assert.equal(result.error, 'Speech synthesis failed (vendor-voice): 503 Service Unavailable');
      assert.ok(transcript.some((t) => t.role === 'agent-action' && t.text === result.error));
      assert.equal(far.closed, true, 'the agent hung up');
      assert.equal(tts.asked, 1);
    });

    it('the voice failing with a fallback: the fallback says the sentence and the rest of the call', async () => {
      const tts = brokenVoice();
      const fallback = new ToneTts({ msPerChar: 10 });
      const { far, transcript, controller, outcome } = call({
        agent: new OfflineAgent(),
        lines: ['who is this'],
        tts,
        fallbackTts: fallback,
      });
      await until('the greeting', () => far.echoed.includes('s1:end'));
      say(far, 500);
      await until('the answer', () => far.echoed.includes('s2:end'));
      controller.abort();
      const result = await outcome;
      assert.equal(result.error, null);
      assert.equal(tts.asked, 1, 'the failed voice is not asked again');
      assert.ok(fallback.requests.length >= 2);
      assert.deepEqual(fallback.requests[0]?.voice, 'local');
      assert.ok(transcript.some((t) => t.role === 'user' && t.text === 'who is this'));
    });

    it('the recogniser breaking is opened again once; breaking again, the agent says why and hangs up', async () => {
      const stt = breakingRecogniser(2);
      const { far, transcript, outcome } = call({ agent: new OfflineAgent(), lines: [], stt: stt.provider });
      await until('the first stream', () => stt.listened(0));
      stt.breakStream(0);
      await until('the second stream', () => stt.listened(1));
      stt.breakStream(1);
      const result = await outcome;
      assert.equal(result.error, 'Speech recognition failed (vendor-stt): socket closed');
      assert.ok(transcript.some((t) => t.role === 'assistant' && t.text === CANNOT_HEAR_LINE));
      assert.equal(far.closed, true);
    });

    it('a recogniser that cannot be opened: the agent says why and hangs up', async () => {
      const stt = breakingRecogniser(0);
      const { transcript, outcome } = call({ agent: new OfflineAgent(), lines: [], stt: stt.provider });
      const result = await outcome;
      assert.equal(result.error, 'Speech recognition failed (vendor-stt): connection refused');
      assert.ok(transcript.some((t) => t.role === 'assistant' && t.text === CANNOT_HEAR_LINE));
    });
  });
});
