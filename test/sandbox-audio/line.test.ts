import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { SandboxNetwork } from '../../src/carriers/sandbox/network.js';
import { InProcessMedia, LineCaptions, SpokenCaptions } from '../../src/carriers/sandbox/audio-line.js';
import { PersonaAudioEnd } from '../../src/carriers/sandbox/audio-persona.js';
import { runPersona } from '../../src/carriers/sandbox/persona.js';
import type { TtsProvider } from '../../src/providers/tts/types.js';
import { wantsSandboxAudio } from '../../src/carriers/sandbox/audio.js';
import { hasInboundAudio, watchAnsweringMachine, type AmdResult } from '../../src/amd/acoustic.js';
import { FRAME_SAMPLES, MULAW_SILENCE, decodeMulaw, encodeMulaw, tone } from '../../src/media/audio.js';
import type { MediaEvent } from '../../src/media/transport.js';
import { SandboxStt } from '../../src/carriers/sandbox/stt.js';
import type { SttEvent } from '../../src/providers/stt/types.js';
import type { LegEvent } from '../../src/carriers/types.js';
import { loadConfig } from '../../src/config.js';
import { callRequest } from '../../src/testing/call-request.js';

const silent = () => Buffer.alloc(FRAME_SAMPLES, MULAW_SILENCE);
const voiced = (i: number) => encodeMulaw(tone([220 + (i % 7) * 30, 660], 20, 9000));

describe('sandbox STT: an honest transcript oracle', () => {
  it('reveals a line only as its voiced frames arrive: partials in proportion, the final at its end', async () => {
    const captions = new LineCaptions();
    const stream = await new SandboxStt(captions).open({
      language: 'en-US',
      keywords: [],
      encoding: 'mulaw',
      sampleRate: 8000,
    });
    const events: SttEvent[] = [];
    stream.on((e) => events.push(e));
    // Ten frames of silence, then a four-word line of 40 frames, then silence.
    for (let i = 0; i < 10; i++) stream.write(silent());
    assert.equal(events.length, 0, 'silence reveals nothing');
    const line = captions.add('one two three four', 40);
    line.start = 10;
    line.sent = 40;
    for (let i = 0; i < 20; i++) stream.write(voiced(i));
    const partials = events.filter((e) => e.type === 'partial').map((e) => (e as { text: string }).text);
    assert.deepEqual(partials, ['one', 'one two'], 'half the frames, half the words');
    for (let i = 20; i < 40; i++) stream.write(voiced(i));
    assert.deepEqual(events.at(-1), { type: 'final', text: 'one two three four', endOfUtterance: true });
    await stream.close();
  });

  it('a line whose audio was silence (never voiced) or never received yields no words', async () => {
    const captions = new LineCaptions();
    const stream = await new SandboxStt(captions).open({
      language: 'en-US',
      keywords: [],
      encoding: 'mulaw',
      sampleRate: 8000,
    });
    const events: SttEvent[] = [];
    stream.on((e) => events.push(e));
    const line = captions.add('you cannot hear me', 10);
    line.start = 0;
    line.sent = 10;
    for (let i = 0; i < 10; i++) stream.write(silent());
    assert.deepEqual(events, [{ type: 'final', text: '', endOfUtterance: true }]);
    // A line placed beyond what was received: nothing of it is told.
    const later = captions.add('still to come', 10);
    later.start = 100;
    stream.finalize();
    assert.ok(events.every((e) => e.type !== 'partial' && !(e.type === 'final' && e.text.includes('come'))));
    await stream.close();
  });

  it('a line cut short gives the words of what was sent; finalize settles what was heard so far', async () => {
    const captions = new LineCaptions();
    const stream = await new SandboxStt(captions).open({
      language: 'en-US',
      keywords: [],
      encoding: 'mulaw',
      sampleRate: 8000,
    });
    const events: SttEvent[] = [];
    stream.on((e) => events.push(e));
    for (let i = 0; i < 10; i++) stream.write(silent());
    const line = captions.add('a b c d e f g h', 80);
    line.start = 10;
    for (let i = 0; i < 20; i++) {
      line.sent++;
      stream.write(voiced(i));
    }
    stream.finalize();
    assert.deepEqual(events.at(-1), { type: 'final', text: 'a b', endOfUtterance: false });
    for (let i = 20; i < 40; i++) {
      line.sent++;
      stream.write(voiced(i));
    }
    line.cut = true;
    stream.write(silent());
    assert.deepEqual(events.at(-1), { type: 'final', text: 'c d', endOfUtterance: true });
    await stream.close();
  });
});

describe('in-process media pair', () => {
  it('delivers frames in order and echoes a mark once the frames before it arrived; close stops the far end', async () => {
    const [a, b] = InProcessMedia.pair();
    const atB: MediaEvent[] = [];
    const atA: MediaEvent[] = [];
    b.on((e) => atB.push(e));
    a.on((e) => atA.push(e));
    a.sendMedia(Buffer.alloc(FRAME_SAMPLES, 1));
    a.sendMark('m1');
    a.sendMedia(Buffer.alloc(FRAME_SAMPLES, 2));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      atB.map((e) => (e.type === 'media' ? e.payload[0] : e.type)),
      [1, 2],
    );
    assert.deepEqual(atA, [{ type: 'mark', name: 'm1' }]);
    let cleared = 0;
    a.onClear = () => cleared++;
    a.clear();
    assert.equal(cleared, 1);
    a.close();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(atB.at(-1), { type: 'stop', reason: 'remote' });
    a.sendMedia(Buffer.alloc(FRAME_SAMPLES, 3));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(atB.filter((e) => e.type === 'media').length, 2, 'nothing after close');
  });
});

describe('sandbox audio mode switches', () => {
  it('OPENLINE_SANDBOX_AUDIO turns it on for every call; metadata.openline_sandbox_audio for one', () => {
    assert.equal(loadConfig({ DATA_DIR: ':memory:' }).sandboxAudio, false);
    assert.equal(loadConfig({ DATA_DIR: ':memory:', OPENLINE_SANDBOX_AUDIO: '1' }).sandboxAudio, true);
    assert.throws(
      () => loadConfig({ DATA_DIR: ':memory:', OPENLINE_SANDBOX_AUDIO: 'maybe' }),
      /OPENLINE_SANDBOX_AUDIO/,
    );
    assert.equal(wantsSandboxAudio(callRequest({ metadata: { openline_sandbox_audio: true } })), true);
    assert.equal(wantsSandboxAudio(callRequest({ metadata: { openline_sandbox_audio: 'yes' } })), false);
    assert.equal(wantsSandboxAudio(callRequest()), false);
  });
});

describe('the sandbox network in audio mode, without the engine', () => {
  it('555-0101: the leg hears the real beep and the detector on its audio says machine', async () => {
    const clock = new ScaledClock(6);
    const network = new SandboxNetwork({ clock, audio: { enabled: true } });
    try {
      const dialed = await network.dial({
        callId: 'vm',
        to: '+14155550101',
        from: null,
        ringTimeoutMs: 60_000,
        signal: new AbortController().signal,
      });
      assert.equal(dialed.status, 'answered');
      if (dialed.status !== 'answered') return;
      const leg = dialed.leg;
      assert.equal(leg.mode, 'audio');
      assert.ok(hasInboundAudio(leg));
      const amd = new Promise<AmdResult>((resolve) => watchAnsweringMachine(leg, resolve));
      const heard: LegEvent[] = [];
      const beep = new Promise<Extract<LegEvent, { type: 'tone' }>>((resolve) =>
        leg.on((e) => {
          heard.push(e);
          if (e.type === 'tone') resolve(e);
        }),
      );
      // The greeting's words come when the turn ends, after the beep that follows it closely.
      const greeting = new Promise<Extract<LegEvent, { type: 'speech' }>>((resolve) =>
        leg.on((e) => {
          if (e.type === 'speech') resolve(e);
        }),
      );
      const result = await amd;
      assert.equal(result.decision, 'machine');
      const tone = await beep;
      assert.ok(Math.abs(tone.frequencyHz - 1000) < 20, `${tone.frequencyHz} Hz`);
      assert.ok(tone.durationMs >= 400 && tone.durationMs <= 600, `${tone.durationMs} ms`);
      assert.equal((await greeting).text, "Hi, you've reached Sam. Please leave a message after the tone.");
      await leg.hangup();
    } finally {
      network.close();
    }
  });

  it('555-0103: in-band DTMF from the audio leg reaches the IVR persona', async () => {
    const clock = new ScaledClock(6);
    const network = new SandboxNetwork({ clock, audio: { enabled: true } });
    try {
      const dialed = await network.dial({
        callId: 'ivr',
        to: '+14155550103',
        from: null,
        ringTimeoutMs: 60_000,
        signal: new AbortController().signal,
      });
      if (dialed.status !== 'answered') return assert.fail(dialed.status);
      const leg = dialed.leg;
      const menu = new Promise<void>((resolve) =>
        leg.on((e) => {
          if (e.type === 'speech' && /press 1/i.test(e.text)) resolve();
        }),
      );
      await menu;
      await leg.sendDtmf('0');
      const hold = new Promise<void>((resolve) =>
        leg.on((e) => {
          if (e.type === 'speech' && /hold/i.test(e.text)) resolve();
        }),
      );
      await hold;
      const log = network.call('ivr')?.log ?? [];
      assert.ok(log.some((e) => e.by === 'agent' && e.kind === 'dtmf' && e.text === '0'));
      assert.equal(network.call('ivr')?.audio?.persona.currentVoice, 'en-us+f4');
      // The person the IVR connects answers in a voice of its own.
      await new Promise<void>((resolve) =>
        leg.on((e) => {
          if (e.type === 'speech' && e.text === 'Hello?') resolve();
        }),
      );
      assert.equal(network.call('ivr')?.audio?.persona.currentVoice, 'en-us+m3');
      await leg.hangup();
    } finally {
      network.close();
    }
  });

  it('an inbound call in audio mode: the caller persona speaks audio to our audio leg', async () => {
    const clock = new ScaledClock(6);
    const network = new SandboxNetwork({ clock, audio: { enabled: true } });
    try {
      const leg = network.connectInbound({ from: '+14155550100', to: '+14155559999', callId: 'in-audio' });
      assert.equal(leg.mode, 'audio');
      const first = await new Promise<string>((resolve) =>
        leg.on((e) => {
          if (e.type === 'speech' && e.text) resolve(e.text);
        }),
      );
      // No greeting from our side: after a while the caller says what it wants.
      assert.equal(first, "Hi, I'd like to order a pizza.");
      await leg.hangup();
    } finally {
      network.close();
    }
  });

  it('transfers from an audio leg: 555-0110 answers and the line closes; 555-0111 fails', async () => {
    const clock = new ScaledClock(6);
    const network = new SandboxNetwork({ clock, audio: { enabled: true } });
    try {
      const dial = (callId: string) =>
        network.dial({
          callId,
          to: '+14155550100',
          from: null,
          ringTimeoutMs: 60_000,
          signal: new AbortController().signal,
        });
      const first = await dial('t-ok');
      if (first.status !== 'answered') return assert.fail(first.status);
      const closed = new Promise<void>((resolve) => network.call('t-ok')?.remote?.done.then(resolve, resolve));
      assert.deepEqual(await first.leg.transfer('+14155550110'), { ok: true });
      await closed;
      assert.equal(network.transfers.at(-1)?.personaId, 'transfer-target');

      const second = await dial('t-fail');
      if (second.status !== 'answered') return assert.fail(second.status);
      const failed = await second.leg.transfer('+14155550111');
      assert.equal(failed.ok, false);
      assert.equal(network.transfers.at(-1)?.callId, 't-fail');
      await second.leg.hangup();
    } finally {
      network.close();
    }
  });
});

describe('a persona in audio mode', () => {
  it("says a script's lines with only their scripted pauses between, however slow synthesis is", async () => {
    // Synthesis takes 250 ms of real time, a second of call time on a 4x clock: more than the
    // pause, as on a busy machine. Lines after the first are synthesised while the one before plays.
    const clock = new ScaledClock(4);
    const slowTts: TtsProvider = {
      name: 'slow',
      async *synthesize() {
        await new Promise((resolve) => setTimeout(resolve, 250));
        yield { pcm: tone([440], 400, 8000), sampleRate: 8000 };
      },
    };
    const [ours, theirs] = InProcessMedia.pair();
    const voicedFrames: boolean[] = [];
    ours.on((e) => {
      if (e.type === 'media') voicedFrames.push(decodeMulaw(e.payload).some((v) => Math.abs(v) > 100));
    });
    const end = new PersonaAudioEnd('persona', theirs, {
      clock,
      tts: slowTts,
      voice: 'en-us',
      language: 'en-US',
      lines: new LineCaptions(),
      spoken: new SpokenCaptions(),
    });
    const session = runPersona(
      end,
      {
        id: 'menu',
        name: 'a menu',
        description: 'three prompts',
        ring: { kind: 'answer', afterMs: 0 },
        start: 'menu',
        states: {
          menu: [
            { say: 'For sales, press 1.' },
            { pause: 600 },
            { repeat: { times: 1, steps: [{ pause: 200 }, { say: 'For support, press 2.' }] } },
            { pause: 600 },
            { say: 'For billing, press 3.' },
            { hangup: true },
          ],
        },
      },
      { clock, resolve: () => undefined },
    );
    await session.done;
    await end.closed;
    const runs: Array<{ voiced: boolean; frames: number }> = [];
    for (const voiced of voicedFrames) {
      const last = runs.at(-1);
      if (last?.voiced === voiced) last.frames++;
      else runs.push({ voiced, frames: 1 });
    }
    const lines = runs.filter((r) => r.voiced);
    const gaps = runs.slice(1, -1).filter((r) => !r.voiced);
    assert.deepEqual(
      lines.map((r) => r.frames),
      [20, 20, 20],
      'three lines of 400 ms',
    );
    // 800 ms and 600 ms of call time between them (40 and 30 frames), give or take the timers'
    // slack on a busy machine; synthesised only when due, each would be a second longer.
    assert.equal(gaps.length, 2, JSON.stringify(runs));
    assert.ok(Math.abs(gaps[0]!.frames - 40) <= 4, `first pause ${gaps[0]!.frames} frames`);
    assert.ok(Math.abs(gaps[1]!.frames - 30) <= 4, `second pause ${gaps[1]!.frames} frames`);
  });
});
