/**
 * The local text-to-speech default: espeak-ng, a rule-based synthesiser from Debian that needs no
 * network and no key. Its voices sound robotic but are real speech, which is what the sandbox's
 * audio mode and calls without a cloud TTS need.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { WavStreamReader } from './pcm-stream.js';
import { TtsError, type PcmChunk, type TtsProvider, type TtsRequest } from './types.js';

/** espeak-ng writes 22,050 Hz 16-bit mono. */
export const ESPEAK_SAMPLE_RATE = 22050;

export interface EspeakOptions {
  /** The executable, looked up on PATH. Default `espeak-ng`. */
  command?: string;
  /** Speaking rate in words per minute (espeak-ng `-s`). Default 165, the sandbox's speaking rate. */
  wordsPerMinute?: number;
  /** Starts the process. Default node:child_process spawn (no shell); tests pass a wrapper to watch it. */
  spawnProcess?: (command: string, args: string[]) => ChildProcessWithoutNullStreams;
}

/** espeak-ng language voices for the languages of calls whose code is not already an espeak-ng voice. */
const ESPEAK_LANGUAGES: Record<string, string> = { zh: 'cmn', fr: 'fr-fr', no: 'nb' };

/**
 * The espeak-ng voice for a call: the catalogue voice (`en-us+f3`) for English calls; for other
 * languages that language's espeak-ng voice with the catalogue voice's variant (`es+f3`), so that
 * a Spanish call is read with Spanish rules in the same voice character.
 */
export function espeakVoiceFor(catalogueVoice: string, language: string): string {
  const primary = language.trim().toLowerCase().split(/[-_]/)[0] ?? '';
  if (primary === '' || primary === 'en') return catalogueVoice;
  const variant = catalogueVoice.split('+')[1];
  const voice = ESPEAK_LANGUAGES[primary] ?? primary;
  return variant ? `${voice}+${variant}` : voice;
}

export class EspeakTts implements TtsProvider {
  readonly name = 'espeak';
  private readonly command: string;
  private readonly wordsPerMinute: number;
  private readonly spawnProcess: (command: string, args: string[]) => ChildProcessWithoutNullStreams;

  constructor(options: EspeakOptions = {}) {
    this.command = options.command ?? 'espeak-ng';
    this.wordsPerMinute = options.wordsPerMinute ?? 165;
    this.spawnProcess = options.spawnProcess ?? ((command, args) => spawn(command, args, { stdio: 'pipe' }));
  }

  async *synthesize(request: TtsRequest): AsyncGenerator<PcmChunk> {
    const { signal } = request;
    // espeak-ng reads stdin line by line; one line keeps the sentence's intonation whole.
    const text = request.text.replace(/\s+/g, ' ').trim();
    if (signal?.aborted || text === '') return;
    // The text goes through stdin, never argv, so no text can read as an option.
    const child = this.spawnProcess(this.command, ['--stdout', '-v', request.voice, '-s', String(this.wordsPerMinute)]);
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => {
      if (stderr.length < 2000) stderr += data.toString('utf8');
    });
    const exited = new Promise<{ code: number | null; error?: Error }>((resolve) => {
      child.once('error', (error) => resolve({ code: null, error }));
      child.once('close', (code) => resolve({ code }));
    });
    child.stdin.on('error', () => {}); // EPIPE when espeak-ng is missing or was killed: the exit says why
    child.stdin.end(text);
    const kill = (): void => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    signal?.addEventListener('abort', kill, { once: true });
    const wav = new WavStreamReader();
    // Iterated by hand so that leaving early kills espeak-ng before its stdout closes (not a SIGPIPE race).
    const stdout = (child.stdout as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await stdout.next();
        if (next.done) break;
        const bytes = next.value;
        if (signal?.aborted) return;
        let pcm: Int16Array;
        try {
          pcm = wav.push(bytes);
        } catch (error) {
          throw new TtsError(`espeak-ng wrote unreadable audio: ${(error as Error).message}`, false);
        }
        if (pcm.length > 0) yield { pcm, sampleRate: wav.sampleRate ?? ESPEAK_SAMPLE_RATE };
      }
      const { code, error } = await exited;
      if (signal?.aborted) return;
      if (error) {
        const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
        throw new TtsError(
          missing
            ? `${this.command} is not installed: install the Debian package espeak-ng, or set OPENLINE_TTS to openai or elevenlabs`
            : `${this.command} could not start: ${error.message}`,
          false,
          undefined,
          { cause: error },
        );
      }
      if (code !== 0) {
        throw new TtsError(`${this.command} failed (exit ${code}): ${stderr.trim() || 'no message'}`, false);
      }
    } catch (error) {
      if (signal?.aborted) return;
      throw error;
    } finally {
      signal?.removeEventListener('abort', kill);
      kill();
      await stdout.return?.();
    }
  }
}

/** Whether the espeak-ng program runs here (the local voice of audio calls and the sandbox's audio mode). */
export function espeakAvailable(command = 'espeak-ng'): boolean {
  try {
    return spawnSync(command, ['--version'], { stdio: 'ignore', timeout: 5000 }).status === 0;
  } catch {
    return false;
  }
}
