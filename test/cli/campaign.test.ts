import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { ScaledClock } from '../../src/clock.js';
import { main } from '../../src/cli/index.js';
import { parseWindow } from '../../src/cli/campaign.js';

type Obj = Record<string, unknown>;

describe('openline campaign (against a running server)', () => {
  let t: TestApp;
  let url: string;
  let dir: string;
  const clock = new ScaledClock(100);

  /** Runs the CLI in this process; collects what it prints. */
  async function cli(args: string[], env: Record<string, string | undefined> = {}) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(
      args,
      { out: (l) => out.push(l), err: (l) => err.push(l), isTTY: false },
      { OPENLINE_URL: url, OPENLINE_API_KEY: t.key, ...env },
    );
    return { code, out, err: err.join('\n') };
  }

  function csv(name: string, text: string): string {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  }

  async function campaignCount(): Promise<number> {
    const r = await t.request('GET', '/v1/campaigns');
    return (r.body.campaigns as Obj[]).length;
  }

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-cli-campaign-'));
    t = await createTestApp({ clock });
    await t.services.startWorkers();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates a campaign from a CSV: extra columns become request_data, metadata.* columns metadata', async () => {
    const file = csv(
      'spring-offer.csv',
      'phone_number,first_name,metadata.crm_id\n' +
        '+1 415 555 0100,Ada,7\n' +
        '\n' +
        '(212) 555-0104,"Bob, Jr",\n' +
        '3125550105,,9\n',
    );
    const r = await cli([
      'campaign',
      'create',
      '--csv',
      file,
      '--task',
      'Offer {{first_name}} the spring discount.',
      '--max-concurrent',
      '2',
      '--calls-per-minute',
      '30',
      '--window',
      'mon-fri 09:00-17:00 America/Chicago',
      '--retries',
      '1',
      '--no-auto-complete',
      '--param',
      'answered_by_enabled=true',
      '--param',
      'voice=maya',
    ]);
    assert.equal(r.code, 0, r.err);
    const id = r.out.at(-1)!;
    assert.match(r.out.join('\n'), /Created campaign .* with 3 numbers/);
    const details = await t.request('GET', `/v1/campaigns/${id}`);
    assert.equal(details.status, 200, JSON.stringify(details.body));
    const campaign = (details.body.campaigns as Obj[])[0]!;
    assert.equal(campaign.campaign_name, 'spring-offer');
    assert.equal(campaign.count, 3);
    const config = campaign.campaign_config as Obj;
    assert.deepEqual(config.pacing, { max_concurrent: 2, calls_per_minute: 30 });
    assert.equal(config.auto_mark_complete, false);
    assert.equal(config.retries, 1);
    const window = config.calling_window as Obj;
    assert.equal(window.start, '09:00');
    assert.equal(window.end, '17:00');
    assert.deepEqual(window.days, ['mon', 'tue', 'wed', 'thu', 'fri']);
    assert.equal(window.timezone, 'America/Chicago');
    const shared = campaign.request_data as Obj;
    assert.equal(shared.answered_by_enabled, true);
    assert.equal(shared.voice, 'maya');
    const numbers = await t.services.storage.db
      .selectFrom('campaign_numbers')
      .select(['phone_number', 'request_data', 'metadata'])
      .where('campaign_id', '=', id)
      .orderBy('position')
      .execute();
    assert.deepEqual(
      numbers.map((n) => [n.phone_number, JSON.parse(n.request_data ?? 'null'), JSON.parse(n.metadata ?? 'null')]),
      [
        ['+14155550100', { first_name: 'Ada' }, { crm_id: '7' }],
        ['+12125550104', { first_name: 'Bob, Jr' }, null],
        ['+13125550105', null, { crm_id: '9' }],
      ],
    );
    assert.equal((await cli(['campaign', 'stop', id])).code, 0);
  });

  it('takes campaign fields from --json, the flags overriding them', async () => {
    const file = csv('json.csv', 'phone_number\n+14155550104\n');
    const fields = path.join(dir, 'fields.json');
    fs.writeFileSync(
      fields,
      JSON.stringify({
        name: 'from json',
        sequences: [{ task: 'First try.' }, { task: 'Second try.', delay: 3600 }],
        pacing: { max_concurrent: 7, calls_per_minute: 5 },
        voice: 'maya',
      }),
    );
    const r = await cli([
      'campaign',
      'create',
      '--csv',
      file,
      '--json',
      fields,
      '--calls-per-minute',
      '12',
      '--no-auto-complete',
    ]);
    assert.equal(r.code, 0, r.err);
    const id = r.out.at(-1)!;
    const campaign = ((await t.request('GET', `/v1/campaigns/${id}`)).body.campaigns as Obj[])[0]!;
    assert.equal(campaign.campaign_name, 'from json');
    assert.deepEqual((campaign.campaign_config as Obj).pacing, { max_concurrent: 7, calls_per_minute: 12 });
    assert.deepEqual(
      (campaign.sequences as Obj[]).map((step) => step.task),
      ['First try.', 'Second try.'],
    );
    assert.equal((campaign.request_data as Obj).voice, 'maya');
    assert.equal((await cli(['campaign', 'stop', id])).code, 0);

    fs.writeFileSync(fields, '[1, 2]');
    const notObject = await cli(['campaign', 'create', '--csv', file, '--json', fields]);
    assert.equal(notObject.code, 1);
    assert.match(notObject.err, /must hold a JSON object/);
  });

  it('refuses a CSV with bad rows, naming each line and column, and creates nothing', async () => {
    const before = await campaignCount();
    const file = csv(
      'bad.csv',
      'name,phone_number\n' +
        'Ada,+14155550100\n' +
        'Bob,555-12\n' +
        'Cy,\n' +
        'Di,4155550100\n' +
        'Ed,+1 415 CALL NOW\n',
    );
    const r = await cli(['campaign', 'create', '--csv', file, '--task', 'Hello']);
    assert.equal(r.code, 1);
    assert.match(r.err, /4 bad rows; nothing was created/);
    assert.match(r.err, /line 3, column phone_number: "555-12"/);
    assert.match(r.err, /line 4, column phone_number: empty: must not be empty/);
    assert.match(r.err, /line 5, column phone_number: \+14155550100 is already on line 2/);
    assert.match(r.err, /line 6, column phone_number: .*letters/);
    assert.equal(await campaignCount(), before);

    const noColumn = await cli([
      'campaign',
      'create',
      '--csv',
      csv('nocol.csv', 'name,phone\nAda,+14155550100\n'),
      '--task',
      'x',
    ]);
    assert.equal(noColumn.code, 1);
    assert.match(noColumn.err, /no phone_number column \(the header has: name,phone\)/);

    const ragged = await cli([
      'campaign',
      'create',
      '--csv',
      csv('ragged.csv', 'phone_number,a\n+14155550100,1,2\n'),
      '--task',
      'x',
    ]);
    assert.equal(ragged.code, 1);
    assert.match(ragged.err, /ragged\.csv: .*line 2/);

    const empty = await cli(['campaign', 'create', '--csv', csv('empty.csv', 'phone_number\n'), '--task', 'x']);
    assert.equal(empty.code, 1);
    assert.match(empty.err, /no numbers/);

    const missing = await cli(['campaign', 'create', '--csv', path.join(dir, 'nope.csv'), '--task', 'x']);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /Cannot read the CSV file .*nope\.csv: ENOENT/);
    assert.equal(await campaignCount(), before);
  });

  it('reports what the server refuses, naming the field, and usage mistakes with exit code 2', async () => {
    const file = csv('ok.csv', 'phone_number\n+14155550100\n');
    const refused = await cli(['campaign', 'create', '--csv', file, '--task', 'x', '--param', 'temperature=5']);
    assert.equal(refused.code, 1);
    assert.match(refused.err, /did not create the campaign/);
    assert.match(refused.err, /temperature/);

    const noTask = await cli(['campaign', 'create', '--csv', file]);
    assert.equal(noTask.code, 2);
    assert.match(noTask.err, /--task TEXT or --pathway-id ID/);
    const noCsv = await cli(['campaign', 'create', '--task', 'x']);
    assert.equal(noCsv.code, 2);
    assert.match(noCsv.err, /--csv FILE/);
    const badPacing = await cli(['campaign', 'create', '--csv', file, '--task', 'x', '--max-concurrent', 'lots']);
    assert.equal(badPacing.code, 2);
    assert.match(badPacing.err, /--max-concurrent must be a whole number/);
    const badWindow = await cli(['campaign', 'create', '--csv', file, '--task', 'x', '--window', 'mornings']);
    assert.equal(badWindow.code, 2);
    assert.match(badWindow.err, /--window must look like/);
    const wrongOption = await cli(['campaign', 'watch', 'abc', '--csv', file]);
    assert.equal(wrongOption.code, 2);
    assert.match(wrongOption.err, /campaign watch does not take --csv/);
    const noId = await cli(['campaign', 'watch']);
    assert.equal(noId.code, 2);

    const badKey = await cli(['campaign', 'create', '--csv', file, '--task', 'x'], { OPENLINE_API_KEY: 'wrong' });
    assert.equal(badKey.code, 1);
    assert.match(badKey.err, /refused the API key/);
    const noKey = await cli(['campaign', 'watch', 'abc'], { OPENLINE_API_KEY: undefined });
    assert.equal(noKey.code, 2);
    assert.match(noKey.err, /OPENLINE_API_KEY/);
    // A port nothing listens on (the test server's, once closed, is not reused here: port 9 is discard).
    const down = await cli(['campaign', 'watch', 'abc', '--url', 'http://127.0.0.1:9']);
    assert.equal(down.code, 1);
    assert.match(down.err, /Cannot reach the Openline server at http:\/\/127\.0\.0\.1:9/);
    const unknown = await cli(['campaign', 'watch', 'no-such-campaign']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /Could not read campaign no-such-campaign: Campaign not found/);
  });

  it('watches a campaign to completion with counters that add up', async () => {
    const file = csv('four.csv', 'phone_number\n+14155550100\n+14155550101\n+14155550104\n+14155550105\n');
    const created = await cli([
      'campaign',
      'create',
      '--csv',
      file,
      '--task',
      'Say hello.',
      '--calls-per-minute',
      '600',
      '--max-concurrent',
      '4',
      '--param',
      'answered_by_enabled=true',
    ]);
    assert.equal(created.code, 0, created.err);
    const id = created.out.at(-1)!;
    const watched = await cli(['campaign', 'watch', id, '--interval', '0.05']);
    assert.equal(watched.code, 0, watched.err);
    // One line per change, then the summary.
    assert.ok(watched.out.length >= 2, watched.out.join('\n'));
    const last = watched.out.at(-2)!;
    assert.match(last, /^completed \| numbers 4\/4 finished, 4 called \| dialled 4 \| live 0 \| completed \d/);
    assert.match(last, /answered 1 \| voicemail 1 \| unknown 0 \| no answer 2 \| failed 0$/);
    assert.match(
      watched.out.at(-1)!,
      new RegExp(`^Campaign ${id} completed: numbers 4/4 finished, 4 called, dialled 4`),
    );
    for (const line of watched.out.slice(0, -1)) assert.match(line, /^(active|completed) \| numbers \d\/4 finished/);
    // Lines only change forwards: finished numbers never go down.
    const finished = watched.out.slice(0, -1).map((l) => Number(/numbers (\d)\/4/.exec(l)?.[1]));
    assert.deepEqual(
      finished,
      [...finished].sort((a, b) => a - b),
    );
  });

  it('counts a person who answered without answered_by detection as answered', async () => {
    const file = csv('plain.csv', 'phone_number\n+14155550100\n+14155550105\n');
    const created = await cli([
      'campaign',
      'create',
      '--csv',
      file,
      '--task',
      'Say hello.',
      '--calls-per-minute',
      '600',
    ]);
    assert.equal(created.code, 0, created.err);
    const watched = await cli(['campaign', 'watch', created.out.at(-1)!, '--interval', '0.05']);
    assert.equal(watched.code, 0, watched.err);
    assert.match(
      watched.out.at(-2)!,
      /^completed \| numbers 2\/2 finished, 2 called \| dialled 2 \| live 0 \| completed 2 \| answered 1 \|/,
    );
    assert.match(watched.out.at(-2)!, /no answer 1 \| failed 0$/);
  });

  it('stops a campaign and watch ends at once on a stopped campaign', async () => {
    const file = csv('slow.csv', 'phone_number\n+14155550104\n+12125550104\n+13125550104\n');
    const created = await cli(['campaign', 'create', '--csv', file, '--task', 'x', '--calls-per-minute', '0.01']);
    assert.equal(created.code, 0, created.err);
    const id = created.out.at(-1)!;
    const paused = await cli(['campaign', 'pause', id]);
    assert.deepEqual(paused.out, [`Campaign ${id} is paused.`]);
    const stopped = await cli(['campaign', 'stop', id]);
    assert.equal(stopped.code, 0);
    assert.deepEqual(stopped.out, [`Campaign ${id} is stopped.`]);
    const again = await cli(['campaign', 'stop', id]);
    assert.equal(again.code, 1);
    assert.match(again.err, /Could not stop campaign/);
    const watched = await cli(['campaign', 'watch', id, '--interval', '0.05']);
    assert.equal(watched.code, 0, watched.err);
    // The first slot came at once: a call placed before the pause runs on; the rest were skipped.
    const [, finished, called, dialled, live] =
      /^stopped \| numbers (\d)\/3 finished, (\d) called \| dialled (\d) \| live (\d)/.exec(watched.out[0]!) ?? [
        watched.out[0],
      ];
    assert.ok(Number(dialled) <= 1, watched.out[0]);
    // The numbers that were called are told apart from the ones the stop skipped.
    assert.equal(called, dialled, watched.out[0]);
    assert.equal(Number(finished) + Number(live), 3, watched.out[0]);
  });

  it('watch ends when only retries a day away remain, saying when', async () => {
    const file = csv('retry.csv', 'phone_number\n+14155550104\n');
    const created = await cli([
      'campaign',
      'create',
      '--csv',
      file,
      '--task',
      'Say hello.',
      '--calls-per-minute',
      '600',
      '--retries',
      '1',
      '--wait-period',
      '1',
    ]);
    assert.equal(created.code, 0, created.err);
    const id = created.out.at(-1)!;
    const watched = await cli(['campaign', 'watch', id, '--interval', '0.05']);
    assert.equal(watched.code, 0, watched.err);
    assert.match(
      watched.out.at(-1)!,
      new RegExp(`^Campaign ${id}: only retries remain: 1 number\\(s\\) wait for a retry, the first at \\d{4}-`),
    );
    assert.match(watched.out.at(-2)!, /1 waiting for a retry/);
  });

  it('runs as the openline command', async () => {
    const file = csv('bin.csv', 'phone_number,topic\n+14155550100,billing\n');
    const child = spawn(
      process.execPath,
      ['bin/openline.js', 'campaign', 'create', '--csv', file, '--task', 'Talk about {{topic}}.'],
      { env: { ...process.env, OPENLINE_URL: url, OPENLINE_API_KEY: t.key }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, stderr);
    const id = stdout.trim().split('\n').at(-1)!;
    const r = await t.request('GET', `/v1/campaigns/${id}`);
    assert.equal(r.status, 200);
    assert.equal((r.body.campaigns as Obj[])[0]!.count, 1);
  });
});

describe('--window', () => {
  it('reads days, times and a time zone in any order', () => {
    assert.deepEqual(parseWindow('09:00-17:00'), { start: '09:00', end: '17:00' });
    assert.deepEqual(parseWindow('sat-mon 22:00-02:00 UTC'), {
      start: '22:00',
      end: '02:00',
      days: ['sat', 'sun', 'mon'],
      timezone: 'UTC',
    });
    assert.deepEqual(parseWindow('America/New_York mon,wed,fri 10:00-12:00'), {
      start: '10:00',
      end: '12:00',
      days: ['mon', 'wed', 'fri'],
      timezone: 'America/New_York',
    });
    assert.throws(() => parseWindow('mon-fri'), /--window must look like/);
    assert.throws(() => parseWindow('mon-fry 09:00-10:00'), /unknown day fry/);
  });
});
