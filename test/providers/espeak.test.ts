import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { test } from 'node:test';
import { concatPcm, dbfs } from '../../src/media/audio.js';
import { ESPEAK_SAMPLE_RATE, EspeakTts, espeakVoiceFor } from '../../src/providers/tts/espeak.js';
import { TtsError, type PcmChunk } from '../../src/providers/tts/types.js';
import { LANGUAGES } from '../../src/schemas/call.js';

const SENTENCE = 'Hello, this is Openline calling about your appointment tomorrow at ten.';
const LONG_TEXT = Array.from({ length: 200 }, () => SENTENCE).join(' ');
const PARAGRAPH = Array.from({ length: 15 }, () => SENTENCE).join(' ');

async function collect(iterable: AsyncIterable<PcmChunk>): Promise<PcmChunk[]> {
  const chunks: PcmChunk[] = [];
  for await (const chunk of iterable) chunks.push(chunk);
  return chunks;
}

/** An EspeakTts whose processes the test can watch. */
function watched(): { tts: EspeakTts; children: ChildProcessWithoutNullStreams[] } {
  const children: ChildProcessWithoutNullStreams[] = [];
  const tts = new EspeakTts({
    spawnProcess: (command, args) => {
      const child = spawn(command, args, { stdio: 'pipe' });
      children.push(child);
      return child;
    },
  });
  return { tts, children };
}

test('espeak-ng speaks a sentence as 22,050 Hz audio that is not silent', async () => {
  const chunks = await collect(new EspeakTts().synthesize({ text: SENTENCE, voice: 'en-us+f3', language: 'en-US' }));
  assert.ok(chunks.length >= 1);
  for (const chunk of chunks) assert.equal(chunk.sampleRate, ESPEAK_SAMPLE_RATE);
  const pcm = concatPcm(chunks.map((c) => c.pcm));
  const seconds = pcm.length / ESPEAK_SAMPLE_RATE;
  // About 12 words at 165 words a minute.
  assert.ok(seconds > 2 && seconds < 10, `${seconds} s`);
  assert.ok(dbfs(pcm) > -35, `level ${dbfs(pcm)} dBFS`);
});

test('espeak-ng audio streams: the first chunks arrive while the process still runs', async () => {
  const { tts, children } = watched();
  let chunks = 0;
  let runningAtFirstChunk: boolean | undefined;
  for await (const chunk of tts.synthesize({ text: PARAGRAPH, voice: 'en-us+m3', language: 'en-US' })) {
    assert.ok(chunk.pcm.length > 0);
    runningAtFirstChunk ??= children[0]!.exitCode === null;
    chunks++;
  }
  assert.equal(runningAtFirstChunk, true);
  assert.ok(chunks > 5, `${chunks} chunks`);
  assert.equal(children[0]!.exitCode, 0);
});

test('aborting stops espeak-ng at once: the iteration ends and the process is killed', async () => {
  const { tts, children } = watched();
  const controller = new AbortController();
  let samples = 0;
  for await (const chunk of tts.synthesize({
    text: LONG_TEXT,
    voice: 'en-us+f3',
    language: 'en-US',
    signal: controller.signal,
  })) {
    samples += chunk.pcm.length;
    controller.abort();
  }
  const child = children[0]!;
  if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('close', r));
  assert.equal(child.signalCode, 'SIGKILL');
  // 200 sentences would be about ten minutes of audio; far less than a minute came out.
  assert.ok(samples < 60 * ESPEAK_SAMPLE_RATE, `${samples} samples`);
});

test('leaving the loop early kills espeak-ng too', async () => {
  const { tts, children } = watched();
  for await (const _ of tts.synthesize({ text: LONG_TEXT, voice: 'en-us', language: 'en-US' })) break;
  const child = children[0]!;
  if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('close', r));
  assert.equal(child.signalCode, 'SIGKILL');
});

test('an already aborted request starts no process', async () => {
  const { tts, children } = watched();
  const chunks = await collect(
    tts.synthesize({ text: SENTENCE, voice: 'en-us', language: 'en-US', signal: AbortSignal.abort() }),
  );
  assert.equal(chunks.length, 0);
  assert.equal(children.length, 0);
});

test('text that looks like options is spoken, not obeyed', async () => {
  const chunks = await collect(
    new EspeakTts().synthesize({ text: '--help -v xx -w /tmp/out.wav', voice: 'en-us', language: 'en-US' }),
  );
  const pcm = concatPcm(chunks.map((c) => c.pcm));
  assert.ok(pcm.length > ESPEAK_SAMPLE_RATE / 2);
  assert.ok(dbfs(pcm) > -35);
});

test('a missing espeak-ng gives a clear error', async () => {
  const tts = new EspeakTts({ command: 'espeak-ng-not-installed' });
  await assert.rejects(collect(tts.synthesize({ text: 'Hi', voice: 'en-us', language: 'en-US' })), (error) => {
    assert.ok(error instanceof TtsError);
    assert.match(error.message, /espeak-ng-not-installed is not installed: install the Debian package espeak-ng/);
    assert.equal(error.retryable, false);
    return true;
  });
});

test("an unknown espeak-ng voice fails with espeak-ng's message", async () => {
  await assert.rejects(
    collect(new EspeakTts().synthesize({ text: 'Hi', voice: 'xx-nothing', language: 'en-US' })),
    /espeak-ng failed \(exit 1\): .*voice does not exist/,
  );
});

test('every language a call may have maps to a voice espeak-ng has', async () => {
  const tts = new EspeakTts();
  const missing: string[] = [];
  await Promise.all(
    LANGUAGES.map(async (language) => {
      const voice = espeakVoiceFor('en-us+f3', language);
      try {
        const chunks = await collect(tts.synthesize({ text: '1 2 3', voice, language }));
        if (chunks.length === 0) missing.push(`${language}: no audio`);
      } catch (error) {
        missing.push(`${language} -> ${voice}: ${(error as Error).message}`);
      }
    }),
  );
  assert.deepEqual(missing, []);
});
