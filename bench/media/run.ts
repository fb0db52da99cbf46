/**
 * Media benchmark (`npm run bench:media`): the audio call pipeline under concurrent calls, over the
 * Twilio Media Streams protocol on real loopback websockets. A child process plays Twilio (N
 * streams, 20 ms frames, caller utterances spoken by espeak-ng, marks echoed after real-time
 * play-out); this process runs what a Twilio call runs: TwilioMediaStream -> audio leg (VAD,
 * STT, TTS, pacer) -> CallSession, with fake STT/LLM/TTS of fixed latencies.
 *
 * 1. Engine overhead: for each answered turn, the time from the STT's final transcript to the
 *    first frame of the answer sent on the websocket, minus the fakes' fixed latencies (LLM and
 *    TTS first audio), p50 and p99, at 1, 50 and 200 concurrent calls (steps of 40, 25 and 75 s).
 *    Target p99 <= 10 ms at 200.
 * 2. Density: the most concurrent calls (50, 100, 200, 300, ...) with VAD running and a
 *    background track playing (every call sends a frame every 20 ms) for which no outbound frame
 *    left more than 20 ms late and no inbound frame was dropped (handled by the VAD more than
 *    DROP_MS after the carrier sent it, or never). Target >= 200. A frame is late by how long
 *    after the moment the carrier has to play it it leaves: its slot on the 20 ms grid plus the
 *    audio the call keeps at the carrier (--ahead, 40 ms as the server by default). The emulated
 *    carrier also counts the gaps it hears (media arriving more than 20 ms after the audio before
 *    it finished playing), printed beside the longest its own event loop was held up: it shares
 *    the two cores at a lower priority and sees a frame only when its loop gets to it, so its gaps
 *    are a check on the server's figures, not the measure.
 *
 * Options: --quick (shorter runs), --vad=energy|silero (overhead with that VAD, density with it
 * only; by default overhead uses Silero and density is measured with Silero, then the energy VAD),
 * --calls=N (each measure at N calls only: for profiling one load), --only=overhead|density,
 * --phases=N (the frame scheduler's phases; default 4, as the server), --ahead=N (frames each
 * call keeps at the carrier beyond the one playing; default 2, as the server; 0 sends every frame
 * on its slot and none ahead), --seconds=N (every step N seconds long).
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { PerformanceObserver, constants, monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';
import { parseStreamMessage, TwilioMediaStream } from '../../src/carriers/twilio/media-stream.js';
import { createAudioLeg, audioLegSettings, type AudioLeg } from '../../src/media/audio-leg.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import { preloadBackgroundTracks } from '../../src/media/background.js';
import { sharedSileroModel } from '../../src/media/vad-silero.js';
import { createVad, type Vad, type VadKind } from '../../src/media/vad.js';
import type { MediaEvent, MediaTransport } from '../../src/media/transport.js';
import { CallSession } from '../../src/calls/session.js';
import { systemClock } from '../../src/clock.js';
import type { Agent } from '../../src/agent/types.js';
import type { TurnLatency } from '../../src/media/latency.js';
import type { TtsProvider } from '../../src/providers/tts/types.js';
import { ScriptedStt, ToneTts } from '../../src/testing/audio-fakes.js';
import { callerUtterance } from './speech.js';
import { callRequest } from '../../src/testing/call-request.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const vadOption = args.find((a) => a.startsWith('--vad='))?.slice(6) as VadKind | undefined;
const phasesOption = args.find((a) => a.startsWith('--phases='))?.slice(9);
const PHASES = phasesOption === undefined ? 4 : Number(phasesOption);
const aheadOption = args.find((a) => a.startsWith('--ahead='))?.slice(8);
const secondsOption = args.find((a) => a.startsWith('--seconds='))?.slice(10);
/** Each step this long instead of its default (a longer step gives a steadier p99). */
const STEP_MS = secondsOption === undefined ? undefined : Number(secondsOption) * 1000;
if (STEP_MS !== undefined && !(STEP_MS >= 1000)) throw new Error('--seconds must be at least 1');
/** Frames each call keeps at the carrier beyond the one playing (the server's default: 40 ms). */
const AHEAD = aheadOption === undefined ? 2 : Number(aheadOption);
const callsOption = args.find((a) => a.startsWith('--calls='))?.slice(8);
const onlyCalls = callsOption === undefined ? undefined : Number(callsOption);
const only = args.find((a) => a.startsWith('--only='))?.slice(7);
if (only !== undefined && only !== 'overhead' && only !== 'density' && only !== 'voice')
  throw new Error('--only must be overhead, density or voice');
if (!(Number.isInteger(AHEAD) && AHEAD >= 0)) throw new Error('--ahead must be a whole number of frames');
if (onlyCalls !== undefined && !(Number.isInteger(onlyCalls) && onlyCalls > 0))
  throw new Error('--calls must be a positive integer');

/** The fakes' fixed latencies (subtracted from the measured span). */
const LLM_MS = 100;
/** Section 3: how long the writing model takes over a whole reply. */
const WRITE_MS = 3000;
const TTS_FIRST_AUDIO_MS = 80;
/** Before the measured span (end of speech -> STT final): not subtracted, not counted. */
const STT_FINAL_MS = 50;
/** An inbound frame handled later than this after the carrier sent it counts as dropped. */
const DROP_MS = 100;
const CYCLE_MS = 6000;
const epoch = () => performance.timeOrigin + performance.now();

/** When a turn was ready for the agent (ms after the end of speech): its final words in and its silence over. */
function readyMs(turn: TurnLatency): number {
  return Math.max(turn.stt_ms ?? 0, turn.turn_ms);
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

/**
 * A model that writes its reply over `totalMs`: the first sentence at once, the other words spread
 * evenly after it. With `stream` the session hears the words as they come (a streamed reply);
 * without, the whole reply only at the end (as before streaming).
 */
const STREAMED_REPLY = ['Nine to five on weekdays.', 'Saturdays ten to noon.', 'Anything else?'];
function writingModel(totalMs: number, stream: boolean): Agent {
  return {
    label: 'bench-writer',
    // As a language model's agent: a caller going on after a pause restarts the reply with all their words.
    restartable: true,
    respond: (input, ctx) =>
      new Promise((resolve) => {
        if (input.kind !== 'heard') {
          resolve({ say: input.kind === 'start' ? 'Hello, how can I help?' : null, action: null });
          return;
        }
        const [first, ...rest] = STREAMED_REPLY;
        const words = rest.join(' ').split(' ');
        const text = STREAMED_REPLY.join(' ');
        if (stream) ctx.onText?.(`${first!} `);
        words.forEach((word, i) =>
          setTimeout(
            () => {
              if (stream) ctx.onText?.(i === words.length - 1 ? word : `${word} `);
              if (i === words.length - 1) resolve({ say: text, action: null });
            },
            (totalMs * (i + 1)) / words.length,
          ),
        );
      }),
  };
}

/** The fakes of one call, timing what they actually took (timers fire late on a busy machine). */
function fakes(model?: { totalMs: number; stream: boolean }): {
  agent: Agent;
  tts: TtsProvider;
  took: { llm: number; tts: number };
} {
  const took = { llm: LLM_MS, tts: TTS_FIRST_AUDIO_MS };
  const tone = new ToneTts({ firstChunkMs: TTS_FIRST_AUDIO_MS, msPerChar: 60 });
  const fixed: Agent = {
    label: 'bench',
    respond: (input) => {
      const asked = performance.now();
      return new Promise((resolve) =>
        setTimeout(() => {
          took.llm = performance.now() - asked;
          resolve(
            input.kind === 'heard'
              ? { say: 'Our hours are nine to five, Monday to Friday.', action: null }
              : input.kind === 'start'
                ? { say: 'Hello, how can I help?', action: null }
                : { say: null, action: null },
          );
        }, LLM_MS),
      );
    },
  };
  const agent = model ? writingModel(model.totalMs, model.stream) : fixed;
  const tts: TtsProvider = {
    name: 'tone',
    async *synthesize(request) {
      const asked = performance.now();
      let first = true;
      for await (const chunk of tone.synthesize(request)) {
        if (first) took.tts = performance.now() - asked;
        first = false;
        yield chunk;
      }
    },
  };
  return { agent, tts, took };
}

interface Level {
  turns: TurnLatency[];
  /** Per turn: STT final -> first frame, minus what the fake LLM and TTS actually took. */
  engineMs: number[];
  /** Per turn, the overhead's parts: final -> end of turn, LLM and TTS beyond the fakes' own times, framing and send. */
  parts: { turn: number[]; llm: number[]; tts: number[]; send: number[] };
  inboundFrames: number;
  inboundLate: number;
  inboundMaxLagMs: number;
  vadName: string;
  /** The calls' VADs (Silero's count the windows they could not score in time). */
  vads: Vad[];
}

/** Stamps each inbound frame with the instant the carrier sent it, for the VAD wrapper to measure. */
function stamped(inner: TwilioMediaStream, t0: number, sentAt: number[]): MediaTransport {
  return {
    on: (listener) =>
      inner.on((event: MediaEvent) => {
        if (event.type === 'media') sentAt.push(t0 + event.timestampMs);
        listener(event);
      }),
    sendMedia: (payload) => inner.sendMedia(payload),
    sendMark: (name) => inner.sendMark(name),
    clear: () => inner.clear(),
    close: () => inner.close(),
  };
}

/** Counts how late each frame reached a verdict of the VAD. */
function measuredVad(inner: Promise<Vad>, sentAt: number[], level: Level): Promise<Vad> {
  return inner.then((vad) => {
    level.vadName = vad.name;
    level.vads.push(vad);
    const done = () => {
      const lag = epoch() - (sentAt.shift() ?? epoch());
      level.inboundFrames++;
      if (lag > DROP_MS) level.inboundLate++;
      if (lag > level.inboundMaxLagMs) level.inboundMaxLagMs = lag;
    };
    return {
      name: vad.name,
      reset: () => vad.reset(),
      close: () => vad.close?.(),
      process(frame) {
        const score = vad.process(frame);
        if (typeof score === 'number') {
          done();
          return score;
        }
        return score.then((value) => {
          done();
          return value;
        });
      },
    };
  });
}

/** CPU time (ms) a process has used, read from /proc (Linux); 0 when it cannot be read. */
function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}
/** The kernel's clock ticks per second (USER_HZ), 100 on Linux. */
const CLOCK_TICKS = 100;

/** What the emulated carrier reports when its calls are over. */
interface CarrierReport {
  sent: number;
  cpuMs: number;
  /** Outbound frames that reached it more than 20 ms after the audio before them had played, and the longest such gap. */
  gaps: number;
  maxGapMs: number;
  /** The longest its own event loop was held up: it sees a frame arrive only when it gets to it. */
  loopMaxMs: number;
}

async function runLevel(
  calls: number,
  durationMs: number,
  scheduler: FrameScheduler,
  speech: Buffer,
  background: string,
  vadKind: VadKind,
  model?: { totalMs: number; stream: boolean },
  /** What the recogniser hears the caller say each turn. */
  line = 'what are your opening hours',
): Promise<
  Level & {
    sent: number;
    legs: number;
    skipped: number;
    cpuPerCallPct: number;
    loop: { p50: number; p99: number; max: number };
    gc: { count: number; over10: number; maxMs: number; majorMaxMs: number };
    carrierPct: number;
    sileroPct: number | null;
    gaps: number;
    maxGapMs: number;
    carrierLoopMaxMs: number;
  }
> {
  const level: Level = {
    turns: [],
    engineMs: [],
    parts: { turn: [], llm: [], tts: [], send: [] },
    inboundFrames: 0,
    inboundLate: 0,
    inboundMaxLagMs: 0,
    vadName: '',
    vads: [],
  };
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const port = (server.address() as { port: number }).port;
  const sessions: Promise<unknown>[] = [];
  const legs: AudioLeg[] = [];
  server.on('connection', (socket: WebSocket) => {
    let stream: TwilioMediaStream | undefined;
    socket.on('message', (data: Buffer) => {
      const message = parseStreamMessage(data);
      if (!message) return;
      if (message.event === 'start') {
        stream = new TwilioMediaStream(socket, message.start);
        const sentAt: number[] = [];
        const t0 = Number(message.start.customParameters.t0);
        const request = callRequest({ background_track: background });
        const callId = `bench-${message.start.callSid}`;
        const fake = fakes(model);
        const leg = createAudioLeg(stamped(stream, t0, sentAt), audioLegSettings(callId, request, 'bench'), {
          stt: new ScriptedStt({ lines: Array(100).fill(line), finalLatencyMs: STT_FINAL_MS }),
          tts: fake.tts,
          vad: measuredVad(createVad(vadKind), sentAt, level),
          scheduler,
        });
        legs.push(leg);
        leg.latency.onTurn((entry) => {
          level.turns.push(entry);
          if (entry.stt_ms === null) return;
          // The turn is ready when its words are in and its silence is over, whichever comes last (the
          // recogniser is asked for its words 200 ms into the silence, so they are usually in first).
          level.engineMs.push(entry.total_ms - readyMs(entry) - fake.took.llm - fake.took.tts);
          level.parts.turn.push(entry.turn_ms - entry.stt_ms);
          level.parts.llm.push(entry.llm_ms - LLM_MS);
          level.parts.tts.push(entry.tts_ms - TTS_FIRST_AUDIO_MS);
          level.parts.send.push(entry.send_ms);
        });
        const session = new CallSession({
          callId,
          request,
          inbound: true,
          variables: {},
          leg,
          agent: fake.agent,
          clock: systemClock,
          recorder: { transcript: () => Promise.resolve() },
          signal: new AbortController().signal,
          onReply: () => leg.latency.replyReady(),
        });
        sessions.push(session.run());
      } else {
        stream?.receive(message);
      }
    });
  });
  const carrier = fork(path.join(here, 'carrier.ts'), [], { execArgv: ['--import', 'tsx'] });
  // Twilio's side runs on Twilio's machines: here it yields the CPU to the server under test.
  if (carrier.pid) os.setPriority(carrier.pid, 15);
  const forkedAt = performance.now();
  const finished = new Promise<CarrierReport>((resolve) =>
    carrier.on('message', (m: CarrierReport & { done?: boolean }) => m.done && resolve(m)),
  );
  carrier.send({
    cmd: 'start',
    url: `ws://127.0.0.1:${port}/media`,
    calls,
    durationMs,
    utterance: speech.toString('base64'),
    // After the five seconds of answering-machine detection, so that callers are taken for people.
    firstTalkMs: 5500,
    // A model that writes for a while gets that long more between the caller's turns: a caller
    // speaking again before the reply would (rightly) restart it.
    cycleMs: CYCLE_MS + (model?.totalMs ?? 0),
  });
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  // Garbage-collection pauses of this process while the calls run.
  const gcPauses: number[] = [];
  // Full (mark-compact) collections apart: they are rarer and longer than the young generation's.
  let majorMaxMs = 0;
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcPauses.push(entry.duration);
      const kind = (entry as { detail?: { kind?: number } | null }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) majorMaxMs = Math.max(majorMaxMs, entry.duration);
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const cpuStart = process.cpuUsage();
  const sileroPid = vadKind === 'silero' ? (await sharedSileroModel()).pid : undefined;
  const sileroStart = processCpuMs(sileroPid);
  const wallStart = performance.now();
  const { sent, cpuMs, gaps, maxGapMs, loopMaxMs: carrierLoopMaxMs } = await finished;
  // The emulated carrier's CPU over its life (start-up included): it shares the machine's cores.
  const carrierPct = (cpuMs / (performance.now() - forkedAt)) * 100;
  // This process's CPU (all its threads, Silero's worker included) while the calls ran.
  const cpu = process.cpuUsage(cpuStart);
  const cpuPerCallPct = ((cpu.user + cpu.system) / 1000 / (performance.now() - wallStart) / calls) * 100;
  // Silero's inference process (a child of this one) over the same time.
  const sileroPct =
    sileroPid === undefined ? null : ((processCpuMs(sileroPid) - sileroStart) / (performance.now() - wallStart)) * 100;
  loopDelay.disable();
  gcObserver.disconnect();
  const gc = {
    count: gcPauses.length,
    over10: gcPauses.filter((d) => d > 10).length,
    maxMs: Math.max(0, ...gcPauses),
    majorMaxMs,
  };
  // How late the event loop ran what was due (timers, I/O callbacks): ms.
  const loop = { p50: loopDelay.percentile(50) / 1e6, p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 };
  await Promise.race([Promise.allSettled(sessions), new Promise((resolve) => setTimeout(resolve, 5000))]);
  // Nothing of this level may run on into the next one.
  await Promise.all(legs.map((leg) => leg.hangup()));
  carrier.kill();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await new Promise((resolve) => setTimeout(resolve, 1500));
  // Frames the legs gave up on, and windows the Silero model fell too far behind to score.
  const skipped =
    legs.reduce((n, leg) => n + (leg.skippedFrames ?? 0), 0) +
    level.vads.reduce((n, vad) => n + ((vad as { skippedWindows?: number }).skippedWindows ?? 0), 0);
  return {
    ...level,
    sent,
    legs: legs.length,
    skipped,
    cpuPerCallPct,
    loop,
    gc,
    carrierPct,
    sileroPct,
    gaps,
    maxGapMs,
    carrierLoopMaxMs,
  };
}

async function main(): Promise<void> {
  const speech = callerUtterance();
  // As the server does before it takes calls (src/main.ts).
  preloadBackgroundTracks();
  if (vadOption !== 'energy') await sharedSileroModel();
  // As the server builds it (src/services.ts).
  const scheduler = new FrameScheduler({ phases: PHASES, aheadFrames: AHEAD });
  const seconds = (ms: number) => STEP_MS ?? (quick ? ms / 2 : ms);
  const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '-');
  console.log(`bench:media on ${os.cpus().length} cores, Node ${process.version}`);
  console.log(
    'Transport: Twilio Media Streams protocol over real loopback websockets (src/carriers/twilio/media-stream.ts), ' +
      'carrier emulated in a child process',
  );
  console.log(
    `Fakes: STT final ${STT_FINAL_MS} ms after finalize, LLM ${LLM_MS} ms, TTS first audio ${TTS_FIRST_AUDIO_MS} ms; ` +
      `caller speech by espeak-ng (${Math.round((speech.length / 8000) * 1000)} ms), a turn every ${CYCLE_MS / 1000} s per call`,
  );

  console.log('\n1. Engine overhead: STT final -> first outbound frame, minus LLM and TTS latencies (background none)');
  const overheadLevels: ReadonlyArray<readonly [number, number]> = onlyCalls
    ? [[onlyCalls, 25_000]]
    : [
        [1, 40_000],
        [50, 25_000],
        // 2,200 turns: over 600 the p99 is the sixth-worst turn, decided by whichever few meet one of
        // the event loop's rare long stalls (25 s steps at 200 calls gave 3.7-11.3 ms).
        [200, 75_000],
      ];
  for (const [calls, duration] of only === 'density' || only === 'voice' ? [] : overheadLevels) {
    scheduler.stats.reset();
    const r = await runLevel(calls, seconds(duration), scheduler, speech, 'none', vadOption ?? 'silero');
    const overhead = r.turns
      .filter((t) => t.stt_ms !== null)
      .map((t) => t.total_ms - readyMs(t) - LLM_MS - TTS_FIRST_AUDIO_MS);
    console.log(
      `  ${String(calls).padStart(3)} calls (${r.vadName} VAD): ${overhead.length} turns, overhead p50 ${fmt(percentile(overhead, 0.5))} ms, ` +
        `p99 ${fmt(percentile(overhead, 0.99))} ms, max ${fmt(Math.max(...overhead))} ms; ` +
        `less the fakes' actual times p50 ${fmt(percentile(r.engineMs, 0.5))} ms, p99 ${fmt(percentile(r.engineMs, 0.99))} ms; ` +
        `answer after end of speech p50 ${fmt(
          percentile(
            r.turns.map((t) => t.total_ms),
            0.5,
          ),
        )} ms; outbound frames late >20 ms ${scheduler.stats.lateFrames}/${scheduler.stats.frames}; ` +
        `this process ${fmt(r.cpuPerCallPct * calls)}% of a core (${r.cpuPerCallPct.toFixed(2)}% per call), ` +
        `emulated carrier ${fmt(r.carrierPct)}%`,
    );
    const part = (name: string, values: number[]) =>
      `${name} p50 ${fmt(percentile(values, 0.5))} p99 ${fmt(percentile(values, 0.99))}`;
    console.log(
      `      where (ms): words in before the end of the turn's silence in ${r.parts.turn.filter((ms) => ms >= 0).length} of ${r.parts.turn.length} turns; ${part('LLM beyond 100', r.parts.llm)}; ` +
        `${part('TTS beyond 80', r.parts.tts)}; ${part('first audio -> frame sent', r.parts.send)}; ` +
        `event-loop delay p50 ${fmt(r.loop.p50)} p99 ${fmt(r.loop.p99)} max ${fmt(r.loop.max)}; ` +
        `GC pauses ${r.gc.count}, max ${fmt(r.gc.maxMs)} (full collections max ${fmt(r.gc.majorMaxMs)})`,
    );
  }

  if (only === undefined || only === 'voice') {
    console.log(
      `\n3. Voice to voice: end of the caller's speech -> first frame of the answer, with a model whose first ` +
        `sentence comes at once and whole reply after ${WRITE_MS / 1000} s (TTS first audio ${TTS_FIRST_AUDIO_MS} ms a sentence)`,
    );
    // The recogniser's words as Deepgram gives them with punctuation: a closed question ends the
    // turn sooner and the reply is ready when its silence is over (src/media/turn-detector.ts).
    const variants = [
      { name: 'whole reply ', stream: false, line: undefined },
      { name: 'streamed    ', stream: true, line: undefined },
      { name: 'streamed, "?"', stream: true, line: 'What are your opening hours?' },
    ];
    for (const { name, stream, line } of variants) {
      for (const calls of onlyCalls ? [onlyCalls] : [1, 50, 200]) {
        scheduler.stats.reset();
        const r = await runLevel(
          calls,
          seconds(20_000),
          scheduler,
          speech,
          'none',
          vadOption ?? 'silero',
          { totalMs: WRITE_MS, stream },
          line,
        );
        const totals = r.turns.map((t) => t.total_ms);
        console.log(
          `  ${name} ${String(calls).padStart(3)} calls: ${totals.length} turns, ` +
            `voice to voice p50 ${fmt(percentile(totals, 0.5))} ms, p99 ${fmt(percentile(totals, 0.99))} ms; ` +
            `outbound frames late >20 ms ${scheduler.stats.lateFrames}/${scheduler.stats.frames}`,
        );
      }
    }
  }

  if (only === 'overhead' || only === 'voice') {
    scheduler.stop();
    process.exit(0);
  }
  console.log(
    `\n2. Density: VAD on every frame, background track on every call (office), ${seconds(20_000) / 1000} s per step, ` +
      `${AHEAD * 20} ms of audio kept at the carrier`,
  );
  const densities: string[] = [];
  for (const vadKind of vadOption ? [vadOption] : (['silero', 'energy'] as const)) {
    const best = await density(vadKind, scheduler, speech, seconds(20_000));
    densities.push(`${best} concurrent calls with the ${vadKind} VAD`);
  }
  console.log(`\nDensity: ${densities.join('; ')} (target >= 200)`);
  scheduler.stop();
  process.exit(0);
}

async function density(
  vadKind: VadKind,
  scheduler: FrameScheduler,
  speech: Buffer,
  durationMs: number,
): Promise<number> {
  const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '-');
  let best = 0;
  for (const calls of onlyCalls ? [onlyCalls] : [50, 100, 200, 300, 400, 500, 600]) {
    scheduler.stats.reset();
    const r = await runLevel(calls, durationMs, scheduler, speech, 'office', vadKind);
    const stats = scheduler.stats;
    const lost = Math.max(0, r.sent - r.inboundFrames) + r.skipped;
    const ok = stats.lateFrames === 0 && r.inboundLate === 0 && lost === 0 && r.legs === calls;
    console.log(
      `  ${String(calls).padStart(3)} calls (${r.vadName} VAD): outbound ${stats.frames} frames, late >20 ms ${stats.lateFrames}, ` +
        `lateness p99 ${fmt(stats.percentile(0.99))} ms max ${fmt(stats.maxMs)} ms (at the carrier: ${r.gaps} gaps > 20 ms, ` +
        `longest ${fmt(r.maxGapMs)} ms, its own event loop held up to ${fmt(r.carrierLoopMaxMs)} ms); ` +
        `inbound ${r.inboundFrames}/${r.sent} frames, ` +
        `dropped (>${DROP_MS} ms or never) ${r.inboundLate + lost}, max lag ${fmt(r.inboundMaxLagMs)} ms; ` +
        `${r.turns.length} turns; event-loop delay p99 ${fmt(r.loop.p99)} max ${fmt(r.loop.max)} ms; ` +
        `GC pauses ${r.gc.count}, ${r.gc.over10} over 10 ms, max ${fmt(r.gc.maxMs)} ms ` +
        `(full collections max ${fmt(r.gc.majorMaxMs)} ms); ` +
        `this process ${fmt(r.cpuPerCallPct * calls)}% of a core (${r.cpuPerCallPct.toFixed(2)}% per call), ` +
        (r.sileroPct === null ? '' : `Silero's process ${fmt(r.sileroPct)}%, `) +
        `emulated carrier ${fmt(r.carrierPct)}% -> ${ok ? 'OK' : 'FAIL'}`,
    );
    if (!ok) break;
    best = calls;
  }
  return best;
}

await main();
