// Agent-test throughput through the API (`npx tsx bench/agent-tests/api.ts`): one batch run of N
// runs of a scenario of the lead qualification example (a scripted renter, 2 to 3 lines), each a
// sandbox call on the server's engine, text mode, clock 20x as `openline test` runs; how long the
// batch takes on this machine from POST /v1/agent-testing/batch-run to its last judged run.
// Usage: npx tsx bench/agent-tests/api.ts [--runs 100]
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { ScaledClock } from '../../src/clock.js';
import { createTestApp } from '../../src/testing/harness.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '100' } } });
const runs = Number(values.runs);
const spec = JSON.parse(fs.readFileSync('examples/pathways/lead-qualification.json', 'utf8')) as Record<
  string,
  unknown
>;
const t = await createTestApp({ clock: new ScaledClock(20) });
await t.services.startWorkers();
try {
  const pathway = await t.request('POST', '/v1/pathway/create', {
    name: 'Leads',
    nodes: spec.nodes,
    edges: spec.edges,
  });
  const scenario = await t.request('POST', '/v1/agent-testing/scenarios', {
    name: 'A renter is not a fit',
    pathway_id: pathway.body.pathway_id,
    input_messages: ['Hello?', 'No, I rent my apartment.', 'Okay, bye.'],
    assertions: [
      { type: 'NODE_VISITED', config: { node: 'Not a fit' } },
      { type: 'VARIABLE_EQUALS', config: { variable: 'owns_home', value: false } },
    ],
  });
  const started = performance.now();
  const batch = await t.request('POST', '/v1/agent-testing/batch-run', {
    scenario_ids: [scenario.body.id],
    repeat: runs,
  });
  if (batch.status !== 200) throw new Error(JSON.stringify(batch.body));
  const accepted = (performance.now() - started) / 1000;
  let details: Record<string, unknown> = {};
  for (;;) {
    details = (await t.request('GET', `/v1/agent-testing/batches/${String(batch.body.batch_id)}`)).body;
    if (details.status !== 'RUNNING') break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `\n${runs} runs through POST /v1/agent-testing/batch-run on ${os.cpus().length} cores (text mode, clock 20x):`,
  );
  console.log(
    `  the request took ${accepted.toFixed(1)} s (every call placed); ${seconds.toFixed(1)} s until the last run was judged`,
  );
  console.log(
    `  ${((runs / seconds) * 60).toFixed(0)} runs a minute; pass rate ${String(details.pass_rate)} (${String(details.status)})`,
  );
} finally {
  await t.close();
}
