import type { CaseResult } from './runner.js';

const passedRuns = (r: CaseResult) => r.runs.filter((run) => run.passed).length;
export const casePassed = (r: CaseResult): boolean => r.runs.length > 0 && passedRuns(r) === r.runs.length;

/** The last lines of a transcript, for a failure's context. */
function excerpt(transcript: string, lines = 8): string[] {
  const all = transcript.split('\n').filter(Boolean);
  return [...(all.length > lines ? ['...'] : []), ...all.slice(-lines)];
}

/** Each rubric's score (the mean over runs, with --repeat), so a passing judge shows its margin. */
function judgeLines(r: CaseResult): string[] {
  const byJudge = new Map<string, { rubric: string; pass: number; scores: number[] }>();
  for (const run of r.runs)
    for (const j of run.judged ?? []) {
      const key = `${j.pass_score} ${j.rubric}`;
      const seen = byJudge.get(key) ?? { rubric: j.rubric, pass: j.pass_score, scores: [] };
      seen.scores.push(j.score);
      byJudge.set(key, seen);
    }
  return [...byJudge.values()].map(({ rubric, pass, scores }) => {
    const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
    const of = scores.length > 1 ? `, mean of ${scores.length} runs` : '';
    return `judge ${mean.toFixed(2)} (pass ${pass}${of}): "${rubric}"`;
  });
}

/** The readable report: a line per case, and for a failed case what failed and how the call went. */
export function textReport(results: CaseResult[]): string[] {
  const out: string[] = [];
  for (const r of results) {
    const rate = r.runs.length > 1 ? ` (${passedRuns(r)}/${r.runs.length} runs passed)` : '';
    out.push(`${casePassed(r) ? 'PASS' : 'FAIL'}  ${r.suite} › ${r.name}${rate}`);
    for (const line of judgeLines(r)) out.push(`      ${line}`);
    const failed = r.runs.find((run) => !run.passed);
    if (!failed) continue;
    for (const failure of failed.failures) out.push(`      ✗ ${failure}`);
    if (failed.callId) out.push(`      call ${failed.callId}:`);
    for (const line of excerpt(failed.transcript)) out.push(`        ${line}`);
  }
  const passed = results.filter(casePassed).length;
  out.push(
    '',
    `${passed} of ${results.length} cases passed${passed === results.length ? '' : `, ${results.length - passed} failed`}.`,
  );
  return out;
}

/** Characters XML 1.0 cannot carry: controls other than tab, line feed and carriage return. */
const xmlSafe = (text: string): string =>
  [...text].filter((c) => c.charCodeAt(0) >= 0x20 || c === '\t' || c === '\n' || c === '\r').join('');

const xml = (text: string): string =>
  xmlSafe(text).replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!,
  );

/** JUnit XML as CI systems read it: a testsuite per test file, a testcase per case. */
export function junitReport(results: CaseResult[]): string {
  const suites = new Map<string, CaseResult[]>();
  for (const r of results) suites.set(r.suite, [...(suites.get(r.suite) ?? []), r]);
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const failures = results.filter((r) => !casePassed(r)).length;
  lines.push(`<testsuites name="openline test" tests="${results.length}" failures="${failures}">`);
  for (const [suite, cases] of suites) {
    const failed = cases.filter((r) => !casePassed(r)).length;
    const seconds = cases.reduce((sum, r) => sum + r.runs.reduce((s, run) => s + run.seconds, 0), 0);
    lines.push(
      `  <testsuite name="${xml(suite)}" tests="${cases.length}" failures="${failed}" time="${seconds.toFixed(3)}">`,
    );
    for (const r of cases) {
      const time = r.runs.reduce((s, run) => s + run.seconds, 0).toFixed(3);
      lines.push(`    <testcase classname="${xml(suite)}" name="${xml(r.name)}" time="${time}">`);
      const failedRun = r.runs.find((run) => !run.passed);
      if (failedRun) {
        const message = failedRun.failures[0] ?? 'failed';
        lines.push(
          `      <failure message="${xml(message)}">${xml([...failedRun.failures, '', failedRun.transcript].join('\n'))}</failure>`,
        );
      }
      const notes = [...(r.runs.length > 1 ? [`${passedRuns(r)}/${r.runs.length} runs passed`] : []), ...judgeLines(r)];
      if (notes.length) lines.push(`      <system-out>${xml(notes.join('\n'))}</system-out>`);
      lines.push('    </testcase>');
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return `${lines.join('\n')}\n`;
}

/** The results as JSON for tools: every run with its failures, transcript and call id. */
export function jsonReport(results: CaseResult[]): string {
  return `${JSON.stringify(
    results.map((r) => ({ ...r, passed: casePassed(r), pass_rate: r.runs.length ? passedRuns(r) / r.runs.length : 0 })),
    null,
    2,
  )}\n`;
}
