import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { checkModelNeeds, loadSuite, SuiteError } from '../agent-tests/suite.js';
import { casePassed, jsonReport, junitReport, textReport } from '../agent-tests/report.js';
import type { Output } from './commands.js';

export const TEST_USAGE = `Agent tests run simulated callers against your agents and pathways (docs/agent-tests.md):
  test FILE... [--junit FILE] [--json FILE] [--repeat N] [--parallel N] [--audio]
      Runs every case of the test files (YAML or JSON) as sandbox calls on a server in this
      process (the offline model, or the language model of your environment: OPENAI_API_KEY or
      OPENLINE_LLM_BASE_URL), prints a report and exits 1 when a case failed. Judges and callers
      with a goal need the language model.
      --junit FILE     also write JUnit XML (for CI systems)
      --json FILE      also write the results as JSON
      --repeat N       run each case N times and report its pass rate (for language models)
      --parallel N     cases at the same time (default 8)
      --audio          real audio (espeak-ng voices, VAD, latency figures) instead of text`;

/** `openline test`: resolves to the exit code (0 all passed, 1 a case failed, 2 bad usage or files). */
export async function testMain(argv: string[], io: Output, env: Record<string, string | undefined>): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        junit: { type: 'string' },
        json: { type: 'string' },
        repeat: { type: 'string' },
        parallel: { type: 'string' },
        audio: { type: 'boolean' },
      },
    });
  } catch (error) {
    io.err(`openline: ${(error as Error).message}\n\n${TEST_USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const count = (name: string, raw: string | undefined, fallback: number) => {
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new SuiteError(`--${name} must be a whole number of at least 1`);
    return Number(raw);
  };
  let cases;
  let repeat: number;
  let parallel: number;
  try {
    if (positionals.length === 0) throw new SuiteError('name at least one test file');
    cases = positionals.flatMap((file) => loadSuite(file));
    checkModelNeeds(cases, loadConfig(env).llm !== undefined);
    repeat = count('repeat', values.repeat, 1);
    parallel = count('parallel', values.parallel, 8);
  } catch (error) {
    if (error instanceof ConfigError) {
      io.err(`openline: configuration error: ${error.message}`);
      return 2;
    }
    if (!(error instanceof SuiteError)) throw error;
    io.err(`openline: ${error.message}\n\n${TEST_USAGE}`);
    return 2;
  }
  io.out(
    `Running ${cases.length} case${cases.length === 1 ? '' : 's'}${repeat > 1 ? `, ${repeat} times each` : ''}...`,
  );
  // The runner brings the whole server: loaded only when tests run, so other commands start fast.
  const { runCases } = await import('../agent-tests/runner.js');
  const results = await runCases(cases, { env, repeat, parallel, audio: values.audio === true });
  for (const line of textReport(results)) io.out(line);
  if (values.junit) fs.writeFileSync(values.junit, junitReport(results));
  if (values.json) fs.writeFileSync(values.json, jsonReport(results));
  return results.every(casePassed) ? 0 : 1;
}
