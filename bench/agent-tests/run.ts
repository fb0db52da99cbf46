// Agent-test throughput (`npm run bench:agent-tests`): N text-mode cases of the lead qualification
// example (the sandbox's solar lead: about 5 turns each side) run by the `openline test` runner,
// and how long they take on this machine.
// Usage: npm run bench:agent-tests [-- --cases 100 --parallel 16]
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { loadSuite } from '../../src/agent-tests/suite.js';
import { runCases } from '../../src/agent-tests/runner.js';
import { casePassed } from '../../src/agent-tests/report.js';

const { values } = parseArgs({
  options: { cases: { type: 'string', default: '100' }, parallel: { type: 'string', default: '16' } },
});
const count = Number(values.cases);
const [lead] = loadSuite(path.resolve('examples/tests/lead-qualification.yaml'));
const cases = Array.from({ length: count }, (_, i) => ({ ...lead!, name: `${lead!.name} #${i + 1}` }));
const started = performance.now();
const results = await runCases(cases, { env: { PATH: process.env.PATH }, parallel: Number(values.parallel) });
const seconds = (performance.now() - started) / 1000;
const turns = results.reduce((sum, r) => sum + r.runs[0]!.transcript.split('\n').length, 0);
console.log(`\n${count} text-mode cases on ${os.cpus().length} cores, ${values.parallel} at a time:`);
console.log(`  ${seconds.toFixed(1)} s in all, ${((count / seconds) * 60).toFixed(0)} cases a minute`);
console.log(`  ${(turns / count).toFixed(1)} transcript lines per case; ${results.filter(casePassed).length} passed`);
