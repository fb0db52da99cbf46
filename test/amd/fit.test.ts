import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AmdClip, AmdLabel } from '../../src/amd/dataset.js';
import { crossValidate, fitAmd, scoreAmd, traces } from '../../src/amd/fit.js';
import { concatPcm, silence } from '../../src/media/audio.js';
import { syllables } from '../media/signals.js';

function clip(id: string, label: AmdLabel, group: string, pcm: Int16Array): AmdClip {
  return {
    id,
    source: 'training',
    greetingGroup: group,
    voiceGroup: 'none',
    label,
    kind: label === 'human' ? 'human' : 'voicemail',
    text: '',
    voice: null,
    description: id,
    pcm,
    speech: pcm,
    line: { hissDbfs: -90, humDbfs: null, clicksPerSecond: 0 },
    lineSeed: 1,
    reaction: null,
  };
}

// People: greetings of 0.4-2.4 s of voice in words, then silence. Machines: words for 6 s.
const words = (count: number, ms: number, seed: number) =>
  Array.from({ length: count }, (_, i) => concatPcm([syllables(ms, seed + i), silence(200)]));
const people = Array.from({ length: 12 }, (_, i) =>
  clip(
    `p${i}`,
    'human',
    `person:${i % 4}`,
    concatPcm([silence(400), ...words(1 + (i % 4), 400 + 40 * i, i * 10), silence(7000)]),
  ),
);
const machines = Array.from({ length: 12 }, (_, i) =>
  clip(
    `m${i}`,
    'machine',
    `machine:${i % 4}`,
    concatPcm([silence(300), ...words(10, 400 + 10 * i, 500 + i * 10), silence(2000)]),
  ),
);

test('the fit keeps every person a person and finds the machines; cross-validation judges each group with a fit without it', () => {
  const traced = traces([...people, ...machines]);
  const fit = fitAmd(traced);
  const score = scoreAmd(traced, { ...fit, cue: false });
  assert.equal(score.humansAsMachines, 0, JSON.stringify(fit));
  assert.ok(score.correct >= 22, `${score.correct}/24 with ${JSON.stringify(fit)}`);
  // A machine limit below the longest person's voice would hang up on people: the fit never picks one.
  assert.ok(fit.greetingMs! >= 2400, JSON.stringify(fit));

  const byGroup = crossValidate(traced, (c) => c.greetingGroup);
  assert.equal(byGroup.groups, 8);
  assert.equal(byGroup.outcomes.length, 24);
  assert.deepEqual(new Set(byGroup.outcomes.map((o) => o.clip.id)), new Set(traced.map((t) => t.clip.id)));
  // Left out, the longest greetings (group person:3) meet a fit that never saw such long ones: the
  // cross-validation shows what the fit on all of them hides.
  assert.ok(byGroup.humansAsMachines > score.humansAsMachines, JSON.stringify(byGroup.confusion));
  assert.ok(
    byGroup.outcomes
      .filter((o) => o.clip.label === 'human' && o.decision === 'machine')
      .every((o) => o.clip.greetingGroup === 'person:3'),
  );
});
