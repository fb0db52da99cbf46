import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { checkModelNeeds, checkWhere, loadSuite, SuiteError } from '../agent-tests/suite.js';
import { casePassed, jsonReport, junitReport, textReport } from '../agent-tests/report.js';
import { CliError, type Output } from './commands.js';
import { request, serverUrl, type Connection } from './server.js';

export const TEST_USAGE = `Agent tests run simulated callers against your agents and pathways (docs/agent-tests.md):
  test FILE... [--junit FILE] [--json FILE] [--repeat N] [--parallel N] [--audio]
            [--server URL [--api-key KEY]]
      Runs every case of the test files (YAML or JSON) as sandbox calls on a server in this
      process (the offline model, or the language model of your environment: OPENAI_API_KEY or
      OPENLINE_LLM_BASE_URL), prints a report and exits 1 when a case failed. Judges and callers
      with a goal need the language model.
      --junit FILE     also write JUnit XML (for CI systems)
      --json FILE      also write the results as JSON
      --repeat N       run each case N times and report its pass rate (for language models)
      --parallel N     cases at the same time (default 8)
      --audio          real audio (espeak-ng voices, VAD, latency figures) instead of text
      --server URL     run the cases on that running Openline server instead, through its API
                       (cases may name an agent_id, pathway_id or inbound_number of the account)
      --api-key KEY    the account's API key for --server (default OPENLINE_API_KEY)`;

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
        server: { type: 'string' },
        'api-key': { type: 'string' },
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
  let connection: Connection | undefined;
  try {
    if (positionals.length === 0) throw new SuiteError('name at least one test file');
    if (values.server !== undefined) {
      const url = serverUrl(values.server);
      if (!url) throw new SuiteError(`--server must be an http(s) URL such as http://127.0.0.1:8080`);
      const apiKey = values['api-key'] ?? env.OPENLINE_API_KEY;
      if (!apiKey) throw new SuiteError('--server needs an API key of the account: --api-key KEY or OPENLINE_API_KEY');
      if (values.audio)
        throw new SuiteError('--audio goes without --server (on a server, its own OPENLINE_SANDBOX_AUDIO decides)');
      connection = { url, apiKey, hint: 'check --server' };
    } else if (values['api-key'] !== undefined) throw new SuiteError('--api-key goes with --server');
    cases = positionals.flatMap((file) => loadSuite(file));
    checkWhere(cases, connection !== undefined);
    // On a server, a caller with a goal is played by the server's language model.
    if (!connection) checkModelNeeds(cases, loadConfig(env).llm !== undefined);
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
  const { runCases, runOnServer } = await import('../agent-tests/runner.js');
  const options = { env, repeat, parallel, audio: values.audio === true };
  let results;
  if (connection) {
    const server = connection;
    try {
      results = await runOnServer(cases, async (method, url, body) => request(server, method, url, body), options);
    } catch (error) {
      if (!(error instanceof SuiteError || error instanceof CliError)) throw error;
      io.err(`openline: ${error.message}`);
      return 2;
    }
  } else results = await runCases(cases, options);
  for (const line of textReport(results)) io.out(line);
  if (values.junit) fs.writeFileSync(values.junit, junitReport(results));
  if (values.json) fs.writeFileSync(values.json, jsonReport(results));
  return results.every(casePassed) ? 0 : 1;
}
