// Agent-test throughput (`npm run bench:agent-tests`): cases of the lead qualification example
// (the sandbox's solar lead: about 5 turns each side) run by the `openline test` runner, in text
// mode and in audio mode (`--audio`: espeak-ng voices, voice activity detection, real time), and
// how many a minute each mode runs on this machine.
// Usage: npm run bench:agent-tests [-- --cases 100 --audio-cases 16 --parallel 16]
//        (--audio-cases 0 skips audio mode)
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { loadSuite } from '../../src/agent-tests/suite.js';
import { runCases } from '../../src/agent-tests/runner.js';
import { casePassed } from '../../src/agent-tests/report.js';

const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '100' },
    'audio-cases': { type: 'string', default: '16' },
    parallel: { type: 'string', default: '16' },
  },
});
const [lead] = loadSuite(path.resolve('examples/tests/lead-qualification.yaml'));
const parallel = Number(values.parallel);

/** Runs `count` copies of the lead case in one mode and prints the figures. */
async function measure(count: number, audio: boolean): Promise<void> {
  const cases = Array.from({ length: count }, (_, i) => ({ ...lead!, name: `${lead!.name} #${i + 1}` }));
  const started = performance.now();
  const results = await runCases(cases, { env: { PATH: process.env.PATH }, parallel, audio });
  const seconds = (performance.now() - started) / 1000;
  const turns = results.reduce((sum, r) => sum + r.runs[0]!.transcript.split('\n').length, 0);
  const load = os.loadavg().map((l) => l.toFixed(2));
  console.log(`\n${count} ${audio ? 'audio' : 'text'}-mode cases on ${os.cpus().length} cores, ${parallel} at a time:`);
  console.log(`  ${seconds.toFixed(1)} s in all, ${((count / seconds) * 60).toFixed(1)} cases a minute`);
  console.log(`  ${(turns / count).toFixed(1)} transcript lines per case; ${results.filter(casePassed).length} passed`);
  console.log(`  load average after: ${load.join(', ')}`);
}

await measure(Number(values.cases), false);
if (Number(values['audio-cases']) > 0) await measure(Number(values['audio-cases']), true);
