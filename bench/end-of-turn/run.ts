/**
 * End of turn on real audio: how soon the agent answers a caller who has finished, and how often it
 * answers one who only paused mid-sentence (a false end of turn). Sandbox audio calls (espeak-ng
 * voices, the energy VAD, the offline model, the sandbox's recogniser) to a persona that says each
 * of its answers in two halves with a silence between them of 340 or 370 ms (shorter than the
 * default interruption_threshold's 400 ms, so the turn must not end there) or 600 ms (longer than
 * 400 ms but shorter than the 760 ms the leg waits after words that leave the sentence open: the
 * turn ends there only when the first half's words do not read as open), and as one sentence.
 * The silence is what the line carries: the persona's pause plus the trailing silence espeak-ng
 * leaves after the first half (measured here). `--set sentences` says two whole sentences of one
 * turn the same way (a pause between sentences, not within one).
 *
 *   npm run bench:end-of-turn [-- --calls 4] [--set dental|held-out|sentences]
 *
 * Voice to voice is the record's per-turn figure: the caller's last voiced frame to the agent's
 * first frame sent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall } from '../../src/testing/harness.js';
import { EspeakTts } from '../../src/providers/tts/espeak.js';
import { FRAME_SAMPLES, SAMPLE_RATE, concatPcm, resample, rms } from '../../src/media/audio.js';

const callsArg = process.argv.indexOf('--calls');
const CALLS = callsArg > 0 ? Number(process.argv[callsArg + 1]) : 4;
if (!(CALLS >= 1)) throw new Error('--calls takes a number >= 1');
/** The silences between the halves (0: said as one sentence). */
const GAPS = [0, 340, 370, 600];
/**
 * The answers, each in two halves. `dental` is the set the end-of-turn rule was first measured
 * on; `held-out` was written after the rule (src/media/turn-detector.ts, turnWords) and not used
 * to shape it: report the two separately (`--set held-out`).
 */
const SETS: Record<string, [string, string][]> = {
  dental: [
    ['I was hoping to', 'move my appointment to Tuesday afternoon.'],
    ['Yes, and could you', 'also send me a reminder the day before?'],
    ['That would be', 'great, thank you so much for your help.'],
  ],
  'held-out': [
    ['Could you tell me whether', 'the clinic is open on Saturday mornings?'],
    ['My daughter needs a checkup', 'before school starts next month.'],
    ['I think the best time for me is', 'Thursday at ten in the morning.'],
  ],
  // Two whole sentences of one turn with the pause between them: the cost of a shorter wait
  // after a closed sentence (written with that rule, not used to shape it).
  sentences: [
    ['Yes, that works for me.', 'Could you also send me a reminder the day before?'],
    ['No, I have not been in before.', 'This would be my first visit.'],
    ['Thanks.', 'I also wanted to ask about the price of a cleaning.'],
  ],
};
const setArg = process.argv.indexOf('--set');
const SET = setArg > 0 ? process.argv[setArg + 1]! : 'dental';
if (!SETS[SET]) throw new Error(`--set takes one of ${Object.keys(SETS).join(', ')}`);
const HALVES: [string, string][] = SETS[SET];

/** The silence at the end of espeak-ng's audio for `text` (ms), in the sandbox's persona voice. */
async function trailingSilenceMs(text: string): Promise<number> {
  const chunks: Int16Array[] = [];
  let rate = SAMPLE_RATE;
  for await (const chunk of new EspeakTts().synthesize({ text, voice: 'en-us', language: 'en-US' })) {
    chunks.push(chunk.pcm);
    rate = chunk.sampleRate;
  }
  const pcm = resample(concatPcm(chunks), rate, SAMPLE_RATE);
  let frames = 0;
  for (
    let end = pcm.length;
    end >= FRAME_SAMPLES && rms(pcm.subarray(end - FRAME_SAMPLES, end)) < 300;
    end -= FRAME_SAMPLES
  )
    frames++;
  return frames * 20;
}

function personaFor(gapMs: number, number: string, trailMs: number[]): object {
  const answer = (i: number) => {
    const [first, second] = HALVES[i]!;
    if (gapMs === 0) return [{ say: `${first} ${second}` }];
    return [{ say: first }, { pause: Math.max(0, gapMs - trailMs[i]!) }, { say: second }];
  };
  return {
    id: `pauser-${gapMs}`,
    number,
    name: `A person who pauses ${gapMs} ms mid-sentence`,
    description:
      'Answers each of the agent’s turns in two halves with a pause between them, three times, then hangs up.',
    ring: { kind: 'answer', afterMs: 500 },
    replyDelayMs: 300,
    start: 'greet',
    states: {
      greet: [{ say: 'Hello?' }, { goto: 'a0' }],
      ...Object.fromEntries(
        HALVES.map((_, i) => [
          `a${i}`,
          [
            {
              listen: {
                timeoutMs: 15000,
                on: [{ any: true, do: [...answer(i), { goto: i + 1 < HALVES.length ? `a${i + 1}` : 'bye' }] }],
                timeout: [{ hangup: true }],
              },
            },
          ],
        ]),
      ),
      bye: [
        {
          listen: {
            timeoutMs: 8000,
            on: [{ any: true, do: [{ say: 'Bye.' }, { hangup: true }] }],
            timeout: [{ hangup: true }],
          },
        },
      ],
    },
  };
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

const trail = await Promise.all(HALVES.map(([first]) => trailingSilenceMs(first)));
// A first half whose own trailing silence is longer than a gap carries that silence instead.
const shortest = Math.min(...GAPS.filter(Boolean));
if (trail.some((ms) => ms > shortest))
  console.log(
    `note: a first half ends in more than ${shortest} ms of espeak-ng's silence: its ${shortest} ms row carries that`,
  );
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-end-of-turn-'));
GAPS.forEach((gap, i) =>
  fs.writeFileSync(path.join(dir, `pauser-${gap}.json`), JSON.stringify(personaFor(gap, String(9190 + i), trail))),
);
const t = await createTestApp({
  clock: new ScaledClock(1),
  env: { OPENLINE_SANDBOX_AUDIO: '1', OPENLINE_SANDBOX_PERSONAS: dir, DATA_DIR: ':memory:' },
});
await t.services.startWorkers();
console.log(
  `End of turn on sandbox audio calls (set ${SET}): ${CALLS} calls per pause, 3 answers each said in two halves; ` +
    `interruption_threshold 100 (400 ms of silence ends a turn); espeak-ng's trailing silence after the first halves ${trail.join(', ')} ms; ` +
    `load average ${os.loadavg()[0]!.toFixed(1)}`,
);
console.log('silence   answers  false ends  voice to voice p50 / p90 (turns)');
try {
  const results = await Promise.all(
    GAPS.map(async (pause, i) => {
      const records = await Promise.all(
        Array.from({ length: CALLS }, async () => {
          const r = await t.request('POST', '/v1/calls', {
            phone_number: `+1415555${9190 + i}`,
            task: 'Help the caller change their dental appointment and offer a reminder.',
            first_sentence: 'Hi, this is the dental office. How can I help?',
          });
          if (r.status !== 200) throw new Error(JSON.stringify(r.body));
          // A call of three exchanges takes well over 30 s.
          return waitForCall(t, String(r.body.call_id), t.key, 180_000);
        }),
      );
      return { pause, records };
    }),
  );
  for (const { pause, records } of results) {
    let answers = 0;
    let falseEnds = 0;
    const v2v: number[] = [];
    for (const call of records) {
      const lines = call.transcripts as { user: string; text: string }[];
      for (const [first] of HALVES) {
        if (lines.some((l) => l.user === 'user' && l.text.startsWith(first))) answers++;
        // The first half alone, then the agent: it answered a caller who had only paused.
        const bare = (text: string) => text.trim().replace(/[.,!?]$/, '');
        const at = lines.findIndex((l) => l.user === 'user' && bare(l.text) === bare(first));
        if (pause > 0 && at >= 0 && lines[at + 1]?.user === 'assistant') falseEnds++;
      }
      const latency = call.latency as { turns?: { total_ms: number }[] } | null;
      for (const turn of latency?.turns ?? []) v2v.push(turn.total_ms);
    }
    console.log(
      `${String(pause).padStart(4)} ms  ${String(answers).padStart(7)}  ${String(falseEnds).padStart(10)}  ` +
        `${Math.round(percentile(v2v, 0.5))} / ${Math.round(percentile(v2v, 0.9))} ms (${v2v.length})`,
    );
  }
} finally {
  await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
