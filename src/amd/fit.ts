/**
 * Fitting and judging the answering-machine detector's decision thresholds on labelled clips:
 *
 * - `traces` runs the detector's first stage (levels, beeps) over each clip once; the decisions
 *   are then replayed on the traces for every setting tried, so a fit takes seconds;
 * - `withOpener` renders what each clip's line carries when the agent says a short opener (the
 *   conversational cue): the moment follows the live call's rule (OpenerMoment in ./amd.ts), not
 *   the thresholds being fitted;
 * - `fitAmd` chooses thresholds by the cost rule: a person taken for a machine (hung up on) costs
 *   ten times a machine taken for a person or an `unknown` (the agent talks to a machine: cheap),
 *   ties broken by the median time to decision, over the clips alone and with the opener at once
 *   (a call uses the same thresholds either way). The grid never tries what would hang up on
 *   people the training set does not hold: a person given under 1.5 s to answer the agent, an
 *   answer cut at under 2 s of voice, a new phrase over the agent of under 0.6 s (a "Hello?"
 *   or "Sorry?" said into the agent's opener), or an answer to the opener counted with the greeting
 *   (`quietForOpenerMs` is always on: a person who stopped for the agent may answer at length);
 * - `crossValidate` fits on all groups but one and judges the one left out, for each group (by
 *   greeting, by voice), so the figures show how the fit holds on wordings and voices it never saw.
 */
import { FRAME_MS } from '../media/audio.js';
import { cuedPcm, type AmdClip, type AmdLabel } from './dataset.js';
import {
  DEFAULT_AMD_SETTINGS,
  OpenerMoment,
  decideTrace,
  traceOf,
  type AmdDecision,
  type AmdSettings,
  type AmdTrace,
} from './acoustic.js';

export interface TracedClip {
  clip: AmdClip;
  trace: AmdTrace;
}

export interface AmdScore {
  outcomes: Array<{ clip: AmdClip; decision: AmdDecision; atMs: number; reason: string }>;
  total: number;
  correct: number;
  humans: number;
  humansAsMachines: number;
  machines: number;
  machinesAsHumans: number;
  /** Person or machine clips left `unknown`. */
  unknowns: number;
  confusion: Record<AmdLabel, Record<AmdDecision, number>>;
  /** Decision times (ms) over person and machine clips. */
  p50Ms: number;
  p90Ms: number;
  /** The cost rule's total (see the file's comment). */
  cost: number;
}

/** The agent's opener in the simulation of the cue: a short question ("Hi, is this a good time?"). */
export const OPENER_MS = 1500;

/** The first stage over each clip; `front`: its settings (the level gates). */
export function traces(clips: readonly AmdClip[], front: Partial<AmdSettings> = {}): TracedClip[] {
  return clips.map((clip) => ({ clip, trace: traceOf(clip.pcm, undefined, front) }));
}

/** When the agent says its opener, by the live call's rule (OpenerMoment: the first pause, or 1.2 s of voice). In frames. */
export function openerFrame(trace: AmdTrace): number | undefined {
  const moment = new OpenerMoment();
  for (let i = 0; i < trace.voiced.length; i++) if (moment.push(trace.voiced[i] === 1)) return i + 1;
  return undefined;
}

/** Each clip as heard when the agent says its opener (see `openerFrame`), traced with the agent's frames. */
export function withOpener(traced: readonly TracedClip[], front: Partial<AmdSettings> = {}): TracedClip[] {
  return traced.map(({ clip, trace }) => {
    const at = openerFrame(trace);
    if (at === undefined) return { clip, trace };
    const agent = new Uint8Array(trace.voiced.length);
    agent.fill(1, at, Math.min(agent.length, at + OPENER_MS / FRAME_MS));
    const pcm = cuedPcm(clip, at * FRAME_MS, OPENER_MS);
    return { clip, trace: traceOf(pcm, agent, front) };
  });
}

/** The q-quantile of the values (nearest rank), 0 when there are none. */
export const percentile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
};

/** Runs the decisions over traced clips and scores them against the labels. */
export function scoreAmd(traced: readonly TracedClip[], settings: Partial<AmdSettings> = {}): AmdScore {
  const s = { ...DEFAULT_AMD_SETTINGS, ...settings };
  return summarise(traced.map(({ clip, trace }) => ({ clip, ...decideTrace(trace, s) })));
}

/** The thresholds the fit chooses, and the values it tries for each. */
const GRID: ReadonlyArray<[keyof AmdSettings, readonly number[]]> = [
  ['greetingMs', [1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 6000, 7000]],
  ['oneWordGreetingMs', [1400, 1800, 2200, 2600, 3000, 4000, 5000]],
  ['afterGreetingSilenceMs', [600, 700, 800, 900, 1000, 1200]],
  ['afterShortGreetingSilenceMs', [500, 600, 700, 800]],
  ['shortGreetingMs', [600, 800, 1000, 1200]],
];
const CUE_GRID: ReadonlyArray<[keyof AmdSettings, readonly number[]]> = [
  ['restartGapMs', [200, 300, 400, 600, 100_000]],
  ['restartedOverMs', [600, 800, 1000]],
  ['talkedOverMs', [400, 600, 800, 1000, 1200, 100_000]],
  ['suspectOverMs', [400, 600, 800, 1000, 100_000]],
  ['suspectQuietMs', [1500, 2000, 2500]],
  ['replyMaxMs', [2000, 3000, 100_000]],
  ['openerGraceMs', [500, 700, 900, 1100]],
  ['replyWindowMs', [1000, 1500, 2000, 2500]],
  ['quietForOpenerMs', [200, 300, 400, 600]],
];

const withValue = (settings: Partial<AmdSettings>, name: keyof AmdSettings, value: number): Partial<AmdSettings> =>
  ({ ...settings, [name]: value }) as Partial<AmdSettings>;

/** What a fit minimises for a setting: the cost rule's total, then the median time to decision. */
type Objective = (settings: Partial<AmdSettings>) => { cost: number; p50Ms: number };

const better = (a: { cost: number; p50Ms: number }, b: { cost: number; p50Ms: number }) =>
  a.cost < b.cost || (a.cost === b.cost && a.p50Ms < b.p50Ms);

/**
 * Coordinate descent over the grid from `start`: each threshold in turn set to its best value,
 * the others held, until a pass changes nothing (at most four passes).
 */
function descend(
  objective: Objective,
  start: Partial<AmdSettings>,
  grid: ReadonlyArray<[keyof AmdSettings, readonly number[]]>,
): Partial<AmdSettings> {
  let best = { ...start };
  let bestScore = objective(best);
  for (let pass = 0; pass < 4; pass++) {
    let changed = false;
    for (const [name, values] of grid) {
      for (const value of values) {
        if (best[name] === value) continue;
        const trial = withValue(best, name, value);
        const score = objective(trial);
        if (better(score, bestScore)) {
          best = trial;
          bestScore = score;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return best;
}

/**
 * Fits the thresholds on training clips. Without the clips as heard with an opener, the greeting
 * and pause thresholds on the clips alone (cue off). With them, all thresholds at once on both:
 * a live call uses the same greeting and pause thresholds whether or not the agent may speak
 * before the verdict, and with the opener they decide the far ends that stopped for it or spoke
 * over it. The objective is the cost rule's total over the clips alone plus over the clips with
 * the opener.
 */
export function fitAmd(plain: readonly TracedClip[], cued?: readonly TracedClip[]): Partial<AmdSettings> {
  const startOf = (grid: typeof GRID) =>
    Object.fromEntries(grid.map(([name]) => [name, DEFAULT_AMD_SETTINGS[name]])) as Partial<AmdSettings>;
  if (!cued) return { ...descend((s) => scoreAmd(plain, s), { ...startOf(GRID), cue: false }, GRID), cue: true };
  return descend((s) => jointScore(plain, cued, s), { ...startOf(GRID), ...startOf(CUE_GRID), cue: true }, [
    ...GRID,
    ...CUE_GRID,
  ]);
}

/** The cost rule's total over the clips alone and with the opener, and the median with the opener. */
function jointScore(
  plain: readonly TracedClip[],
  cued: readonly TracedClip[],
  settings: Partial<AmdSettings>,
): { cost: number; p50Ms: number } {
  const withCue = scoreAmd(cued, settings);
  return { cost: scoreAmd(plain, { ...settings, cue: false }).cost + withCue.cost, p50Ms: withCue.p50Ms };
}

/**
 * Leave-one-group-out: for each group, fits on the clips of all other groups and decides the
 * group's clips with that fit. Returns every clip's outcome, scored together.
 */
export function crossValidate(
  plain: readonly TracedClip[],
  groupOf: (clip: AmdClip) => string,
  cued?: readonly TracedClip[],
): AmdScore & { groups: number } {
  const groups = [...new Set(plain.map((t) => groupOf(t.clip)))];
  const judged: TracedClip[] = [];
  const settingsOf = new Map<AmdClip, Partial<AmdSettings>>();
  for (const group of groups) {
    const inGroup = (t: TracedClip) => groupOf(t.clip) === group;
    const fit = fitAmd(
      plain.filter((t) => !inGroup(t)),
      cued?.filter((t) => !inGroup(t)),
    );
    for (const t of (cued ?? plain).filter(inGroup)) {
      judged.push(t);
      settingsOf.set(t.clip, cued ? fit : { ...fit, cue: false });
    }
  }
  // Each clip decided with its own fold's settings, then scored together.
  const outcomes = judged.map((t) => ({
    clip: t.clip,
    ...decideTrace(t.trace, { ...DEFAULT_AMD_SETTINGS, ...settingsOf.get(t.clip) }),
  }));
  return { ...summarise(outcomes), groups: groups.length };
}

/** Scores a list of outcomes (decided with whatever settings). */
export function summarise(outcomes: AmdScore['outcomes']): AmdScore {
  const zero = (): Record<AmdDecision, number> => ({ human: 0, machine: 0, unknown: 0 });
  const confusion = { human: zero(), machine: zero(), unknown: zero() };
  for (const o of outcomes) confusion[o.clip.label][o.decision]++;
  const answered = outcomes.filter((o) => o.clip.label !== 'unknown').map((o) => o.atMs);
  const count = (label: AmdLabel) => outcomes.filter((o) => o.clip.label === label).length;
  const unknowns = confusion.human.unknown + confusion.machine.unknown;
  return {
    outcomes,
    total: outcomes.length,
    correct: outcomes.filter((o) => o.decision === o.clip.label).length,
    humans: count('human'),
    humansAsMachines: confusion.human.machine,
    machines: count('machine'),
    machinesAsHumans: confusion.machine.human,
    unknowns,
    confusion,
    p50Ms: percentile(answered, 0.5),
    p90Ms: percentile(answered, 0.9),
    cost:
      10 * confusion.human.machine +
      confusion.machine.human +
      unknowns +
      confusion.unknown.human +
      confusion.unknown.machine,
  };
}

/**
 * Fits the first stage's background gate (`voicedBelowPeakDb`) with the decisions: for each value
 * tried, the clips are traced again and the decisions fitted on them; the value whose fit costs
 * least (audio alone and with the opener together) wins.
 */
export function fitWithGate(
  clips: readonly AmdClip[],
  values: readonly number[] = [100, 30, 24, 18],
): { settings: Partial<AmdSettings>; plain: TracedClip[]; cued: TracedClip[] } {
  let best: { settings: Partial<AmdSettings>; plain: TracedClip[]; cued: TracedClip[]; cost: number } | undefined;
  for (const voicedBelowPeakDb of values) {
    const front = { voicedBelowPeakDb };
    const plain = traces(clips, front);
    const cued = withOpener(plain, front);
    const fit = { ...fitAmd(plain, cued), voicedBelowPeakDb };
    const { cost } = jointScore(plain, cued, fit);
    if (!best || cost < best.cost) best = { settings: fit, plain, cued, cost };
  }
  return best!;
}
