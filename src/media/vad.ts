/**
 * Voice activity detection port. A VAD scores 20 ms frames of 8 kHz PCM with the probability that
 * they hold speech; the audio leg turns the scores into speech starts and ends with its own
 * hysteresis and timing (interruption_threshold). Adapters: vad-silero.ts (Silero v5 on
 * onnxruntime-node) and vad-energy.ts (the fallback); createVad picks one.
 */
import { errorMessage } from '../domain/records.js';
export interface Vad {
  readonly name: string;
  /** Scores one 20 ms frame (FRAME_SAMPLES samples of 8 kHz PCM): 0 = no speech .. 1 = speech. */
  process(frame: Int16Array): Promise<number> | number;
  /** Forgets what it has heard (a new utterance, a new call). */
  reset(): void;
  /** Frees what it holds (model sessions). */
  close?(): Promise<void> | void;
}

export type VadKind = 'silero' | 'energy';

export interface CreateVadOptions {
  /** Told once, with a static message, when Silero cannot load and the energy VAD stands in. */
  log?: { warn(fields: Record<string, unknown>, message: string): void };
  /** Where the Silero VADs come from. Default: the process's shared Silero model. */
  silero?: () => Promise<{ createVad(): Vad }>;
}

type SileroLoader = NonNullable<CreateVadOptions['silero']>;

const sharedSilero: SileroLoader = async () => (await import('./vad-silero.js')).sharedSileroModel();
/** Loaders whose failure was logged: the shared model's is told once per process, not once per call. */
const failuresLogged = new WeakSet<SileroLoader>();

/**
 * A VAD for one call: Silero (one model shared by every call, loaded on first use) unless `kind`
 * is 'energy' or onnxruntime cannot load, in which case the energy VAD.
 */
export async function createVad(kind: VadKind = 'silero', options: CreateVadOptions = {}): Promise<Vad> {
  const { EnergyVad } = await import('./vad-energy.js');
  if (kind === 'energy') return new EnergyVad();
  const load = options.silero ?? sharedSilero;
  try {
    return (await load()).createVad();
  } catch (error) {
    if (!failuresLogged.has(load)) {
      failuresLogged.add(load);
      options.log?.warn({ reason: errorMessage(error) }, 'Silero VAD unavailable; using the energy VAD');
    }
    return new EnergyVad();
  }
}
