import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { testMain } from '../../src/cli/test.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

/** The booking service the agent's custom tool calls, on loopback: it keeps what it was sent. */
async function bookingService() {
  const received: { url: string; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ url: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ booking: { id: 'B-7' }, message: 'Booked for Friday' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    received,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('openline test: expectations on custom tools', () => {
  let service: Awaited<ReturnType<typeof bookingService>>;
  let dir: string;
  before(async () => {
    service = await bookingService();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-agent-tools-'));
  });
  after(async () => {
    await service.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('passes when the tool was called with the inputs, and says what the call showed when not', async () => {
    // The offline model uses the tool its task names once, after the first exchange, with
    // request_data as the input (docs/api-notes.md): the tool really runs, against the service.
    const suite = {
      agent: {
        call: {
          task: 'Book the cleaning with Book Appointment, then say goodbye.',
          first_sentence: 'Hi, this is Ava from Bright Smile Dental.',
          wait_for_greeting: true,
          request_data: { day: 'Friday', patient: { name: 'Sam Lee', plan: 'gold' } },
          tools: [
            {
              name: 'Book Appointment',
              description: 'Books a cleaning',
              url: `${service.url}/book`,
              method: 'POST',
              body: { day: '{{input.day}}', name: '{{input.patient.name}}' },
              response: { booking_id: '$.booking.id' },
            },
          ],
        },
      },
      cases: [
        {
          name: 'books the cleaning for the day asked',
          caller: { lines: ['Hello?', 'Yes, please book it.', 'Thanks, bye.'] },
          expect: {
            tools_called: [{ name: 'book appointment', input: { day: 'friday', patient: { name: '*' } } }],
            tools_not_called: ['Cancel Appointment'],
            variables: { booking_id: 'B-7' },
          },
        },
        {
          name: 'wrong day',
          caller: { lines: ['Hello?', 'Yes, please book it.', 'Thanks, bye.'] },
          expect: { tools_called: [{ name: 'Book_Appointment', input: { day: 'Monday' } }] },
        },
        {
          name: 'must not book',
          caller: { lines: ['Hello?', 'Yes, please book it.', 'Thanks, bye.'] },
          expect: { tools_not_called: ['Book Appointment'] },
        },
        {
          name: 'asks for a transfer tool that was never used',
          caller: { lines: ['Hello?', 'Yes, please book it.', 'Thanks, bye.'] },
          expect: { tools_called: ['Transfer To Billing'] },
        },
      ],
    };
    fs.writeFileSync(`${dir}/tools.json`, JSON.stringify(suite));
    const { io, out } = capture();
    const code = await testMain([`${dir}/tools.json`, '--json', `${dir}/r.json`], io, { PATH: process.env.PATH });
    const report = out.join('\n');
    assert.equal(code, 1, report);
    assert.match(report, /PASS {2}tools › books the cleaning for the day asked/);
    assert.match(report, /FAIL {2}tools › wrong day/);
    assert.match(
      report,
      /✗ tools_called: Book_Appointment was called, but not with \{"day":"Monday"\} \(it got \{"day":"Friday","patient":\{"name":"Sam Lee","plan":"gold"\}\}\)/,
    );
    assert.match(
      report,
      /✗ tools_not_called: Book Appointment was called \(with \{"day":"Friday","patient":\{"name":"Sam Lee","plan":"gold"\}\}\)/,
    );
    assert.match(report, /✗ tools_called: Transfer To Billing was not called \(tools called: Book Appointment\)/);
    assert.match(report, /1 of 4 cases passed, 3 failed\./);
    // The tool ran for real in every case: the service got the rendered body each time.
    assert.equal(service.received.length, 4);
    assert.deepEqual(JSON.parse(service.received[0]!.body), { day: 'Friday', name: 'Sam Lee' });
    // The record shows the input, so the report's transcript does too.
    const json = JSON.parse(fs.readFileSync(`${dir}/r.json`, 'utf8')) as { runs: { transcript: string }[] }[];
    assert.match(json[0]!.runs[0]!.transcript, /agent-action: Tool Book Appointment called with \{"day":"Friday"/);
  });

  it('names the field of a malformed tool expectation, and exits 2', async () => {
    const cases: [string, RegExp][] = [
      ['tools_called: [{ input: { day: Friday } }]', /\/cases\/0\/expect\/tools_called\/0/],
      ['tools_called: []', /\/cases\/0\/expect\/tools_called/],
      ['tools_not_called: [{ name: x }]', /\/cases\/0\/expect\/tools_not_called\/0/],
    ];
    for (const [expect, message] of cases) {
      fs.writeFileSync(
        `${dir}/bad.yaml`,
        `agent: { call: { task: hi } }\ncases:\n  - name: x\n    caller: { lines: [hi] }\n    expect: { ${expect} }\n`,
      );
      const { io, err } = capture();
      assert.equal(await testMain([`${dir}/bad.yaml`], io, { PATH: process.env.PATH }), 2, expect);
      assert.match(err.join('\n'), message);
    }
  });
});
