/**
 * The sandbox's audio mode: a call runs on real audio instead of text. The persona's end speaks
 * espeak-ng lines and real tones as 20 ms mu-law frames over an in-process MediaTransport pair;
 * our end is a real audio leg (createAudioLeg: VAD, STT, TTS, in-band DTMF), the same one a Twilio
 * media stream gets, with the sandbox STT (a transcript oracle over the captions, not speech
 * recognition: src/carriers/sandbox/stt.ts) and the local espeak-ng TTS.
 *
 * Turned on for every sandbox call by OPENLINE_SANDBOX_AUDIO=1, or for one call by
 * `"metadata": {"openline_sandbox_audio": true}` in its request.
 */
import type { Clock } from '../../clock.js';
import type { CallRequest } from '../../schemas/call-request.js';
import { providerVoiceId } from '../../domain/voices.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../media/audio.js';
import { audioLegSettings, createAudioLeg, type AudioLeg, type AudioLegSettings } from '../../media/audio-leg.js';
import { FrameScheduler, clockTimer } from '../../media/pacer.js';
import { createVad, type VadKind } from '../../media/vad.js';
import { SandboxStt } from './stt.js';
import { EspeakTts, espeakVoiceFor } from '../../providers/tts/espeak.js';
import type { PcmChunk, TtsProvider, TtsRequest } from '../../providers/tts/types.js';
import type { TransferResult } from '../types.js';
import { InProcessMedia, LineCaptions, SpokenCaptions, type SpokenCaption } from './audio-line.js';
import { PersonaAudioEnd, type PersonaAudioOptions } from './audio-persona.js';
import type { Persona } from './persona-format.js';

export interface SandboxAudioOptions {
  /** Every sandbox call runs on audio (OPENLINE_SANDBOX_AUDIO=1). Default false: only calls that opt in. */
  enabled?: boolean;
  /** Our agent's voice. Default espeak-ng. */
  tts?: TtsProvider;
  /** The personas' voices. Default espeak-ng. */
  personaTts?: TtsProvider;
  /** Our end's VAD. Default 'energy' (cheap; Silero is the choice for real callers). */
  vad?: VadKind;
  /** The 20 ms grid our end's audio is paced on. Default: one on the network's clock. */
  scheduler?: FrameScheduler;
  /** DATA_DIR: calls with record=true are recorded to DATA_DIR/recordings/<call_id>.wav. */
  dataDir?: string;
}

/** espeak-ng voices of the built-in personas: each a different voice, as different people would be. */
const PERSONA_VOICES: Record<string, string> = {
  person: 'en-us+m3',
  voicemail: 'en-us+f2',
  'voicemail-no-beep': 'en-gb+f3',
  ivr: 'en-us+f4',
  'hangs-up': 'en-us+m1',
  silent: 'en-us+m5',
  screener: 'en-us+f1',
  'transfer-target': 'en-gb+m2',
  talker: 'en-us+m7',
};
const DEFAULT_PERSONA_VOICE = 'en-us+m3';

/** The espeak-ng voice a persona speaks with: its file's `voice`, a built-in choice, or the default. */
export function personaVoice(persona: Persona): string {
  return persona.voice ?? PERSONA_VOICES[persona.id] ?? DEFAULT_PERSONA_VOICE;
}

/** Whether `request` asks for audio on the sandbox ("metadata": {"openline_sandbox_audio": true}). */
export function wantsSandboxAudio(request: CallRequest | undefined): boolean {
  return request?.metadata?.openline_sandbox_audio === true;
}

/**
 * Our agent's TTS with captions: each sentence synthesised is registered (text and length) so the
 * persona's ear can tell which words the audio it hears carries.
 */
export class CaptionedTts implements TtsProvider {
  readonly name: string;

  constructor(
    private readonly inner: TtsProvider,
    private readonly captions: SpokenCaptions,
  ) {
    this.name = inner.name;
  }

  synthesize(request: TtsRequest): AsyncIterable<PcmChunk> {
    // Registered at once, in the order the leg asks: the persona hears sentences in that order.
    const caption = this.captions.open(request.text);
    return this.run(request, caption);
  }

  private async *run(request: TtsRequest, caption: SpokenCaption): AsyncGenerator<PcmChunk> {
    let samples = 0;
    try {
      for await (const chunk of this.inner.synthesize(request)) {
        samples += (chunk.pcm.length * SAMPLE_RATE) / chunk.sampleRate;
        caption.frames = Math.ceil(samples / FRAME_SAMPLES);
        yield chunk;
      }
    } finally {
      caption.complete = true;
      if (request.signal?.aborted) caption.cut = true;
    }
  }
}

export interface AudioCallParts {
  /** Our end: the engine's leg. */
  leg: AudioLeg;
  /** The persona's end, to run the persona on. */
  persona: PersonaAudioEnd;
  /** Ends both sides (network drop). */
  drop(): void;
}

export interface AudioCallSetup {
  clock: Clock;
  callId: string;
  request: CallRequest | undefined;
  persona: Persona;
  options: SandboxAudioOptions;
  scheduler: FrameScheduler;
  note: PersonaAudioOptions['note'];
  transfer?(to: string): Promise<TransferResult>;
}

/** The settings of a call placed without a request (tests dialing the network directly). */
function defaultSettings(callId: string): AudioLegSettings {
  return {
    callId,
    interruptionThreshold: 100,
    language: 'en-US',
    keywords: [],
    voice: 'en-us+f3',
    pronunciationGuide: [],
    backgroundTrack: null,
    record: false,
  };
}

const espeak = new EspeakTts();

/** Builds the two ends of an audio call: our audio leg and the persona's audio end. */
export function connectAudioCall(setup: AudioCallSetup): AudioCallParts {
  const { clock, callId, request, persona } = setup;
  const [ours, theirs] = InProcessMedia.pair(['agent', 'persona']);
  const lines = new LineCaptions();
  const spoken = new SpokenCaptions();
  ours.onClear = () => spoken.cutAll();
  const tts = new CaptionedTts(setup.options.tts ?? espeak, spoken);
  const language = request?.language ?? 'en-US';
  const settings = request
    ? audioLegSettings(callId, request, espeakVoiceFor(providerVoiceId('espeak', request.voice), language))
    : defaultSettings(callId);
  const leg = createAudioLeg(ours, settings, {
    stt: new SandboxStt(lines),
    tts,
    vad: createVad(setup.options.vad ?? 'energy'),
    scheduler: setup.scheduler,
    detectTones: true,
    now: () => clock.now(),
    ...(setup.options.dataDir ? { dataDir: setup.options.dataDir } : {}),
    ...(setup.transfer ? { transfer: setup.transfer } : {}),
  });
  const end = new PersonaAudioEnd('persona', theirs, {
    clock,
    tts: setup.options.personaTts ?? espeak,
    voice: espeakVoiceFor(personaVoice(persona), language),
    language,
    lines,
    spoken,
    ...(persona.echo ? { echo: persona.echo } : {}),
    ...(setup.note ? { note: setup.note } : {}),
  });
  return {
    leg,
    persona: end,
    drop: () => ours.drop(),
  };
}

/** A scheduler for the network's audio calls, on its clock. */
export function sandboxScheduler(clock: Clock): FrameScheduler {
  return new FrameScheduler({ timer: clockTimer(clock) });
}
