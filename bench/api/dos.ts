// Denial-of-service bench: every operation of the OpenAPI document fed its largest allowed body of
// wrong items (and just over its bounds), plus a valid 100,000-number campaign, on one in-process
// server. Prints, per body kind, the worst answer time and the longest the event loop was held
// (what every other request and call waited). Usage: npm run bench:dos
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { OpenAPIV3_1 } from 'openapi-types';
import { createTestApp } from '../../src/testing/harness.js';
import { bodyOperations, largeBodies } from '../../src/testing/large-bodies.js';
import { CAMPAIGN_BODY_LIMIT } from '../../src/api/campaigns.js';

const t = await createTestApp();
await t.app.ready();
const rows: { what: string; status: number; answerMs: number; heldMs: number; bytes: number }[] = [];

async function measure(
  what: string,
  method: string,
  url: string,
  payload: string | Buffer,
  contentType = 'application/json',
): Promise<void> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const start = performance.now();
  const r = await t.app.inject({
    method: method as 'POST',
    url,
    headers: { authorization: t.key, 'content-type': contentType },
    payload,
  });
  const answerMs = performance.now() - start;
  await new Promise((resolve) => setTimeout(resolve, 5));
  histogram.disable();
  rows.push({ what, status: r.statusCode, answerMs, heldMs: histogram.max / 1e6, bytes: payload.length });
}

for (const op of bodyOperations(t.app.swagger() as OpenAPIV3_1.Document)) {
  const limit = op.path === '/v1/campaigns' ? CAMPAIGN_BODY_LIMIT : t.services.config.bodyLimitBytes;
  for (const body of largeBodies(op, limit)) {
    await measure(`${op.method} ${op.path}: ${body.label}`, op.method, op.url, body.payload);
  }
}
const numbers = Array.from({ length: 100_000 }, (_, i) => ({
  phone_number: `+1415${2_000_000 + i}`,
  request_data: { first_name: 'Ada', account: i },
}));
await measure(
  'POST /v1/campaigns: 100,000 valid numbers with request_data',
  'POST',
  '/v1/campaigns',
  JSON.stringify({ name: 'bench', task: 'Say hello.', numbers }),
);
// Text files at the upload limit, tidied on the server's thread: words, line ends, blank runs.
for (const [label, text] of [
  ['words', 'word '.repeat(3_000_000)],
  ['line ends', '\r\n'.repeat(7_000_000)],
  ['spaces', `${'a '.padEnd(32)}\n`.repeat(480_000)],
] as const) {
  const boundary = 'bench-boundary';
  const form = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.txt"\r\ncontent-type: text/plain\r\n\r\n`,
    ),
    Buffer.from(text),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  await measure(
    `POST /v1/knowledge: a text file of ${label}`,
    'POST',
    '/v1/knowledge',
    form,
    `multipart/form-data; boundary=${boundary}`,
  );
}
await t.close();

rows.sort((a, b) => b.heldMs - a.heldMs);
console.log('worst first: status, answer ms, event loop held ms (max delay), body MB, request');
for (const r of rows) {
  console.log(
    `${r.status}  ${r.answerMs.toFixed(0).padStart(6)}  ${r.heldMs.toFixed(1).padStart(7)}  ${(r.bytes / 1e6).toFixed(2).padStart(6)}  ${r.what}`,
  );
}
const answers = rows.map((r) => r.answerMs).sort((a, b) => a - b);
console.log(
  `${rows.length} requests; answer p50 ${answers[Math.floor(answers.length / 2)]?.toFixed(0)} ms, max ${answers.at(-1)?.toFixed(0)} ms; ` +
    `event loop held at most ${Math.max(...rows.map((r) => r.heldMs)).toFixed(1)} ms`,
);
