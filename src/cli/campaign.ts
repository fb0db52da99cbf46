import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseCsv } from 'csv-parse/sync';
import { CsvError } from 'csv-parse';
import cliProgress from 'cli-progress';
import { request, serverUrl, type Connection, type ServerReply } from './server.js';
import type { CampaignProgress } from '../store/campaigns.js';
import { normalizePhone } from '../domain/phone.js';
import { WEEKDAYS } from '../schemas/campaign.js';
import { CliError, type Output } from './commands.js';
import { errorMessage } from '../domain/records.js';

/** A wrong command line: the caller shows the usage and exits with 2. */
export class CampaignUsageError extends Error {}

export const CAMPAIGN_USAGE = `Campaign commands talk to a running Openline server over its REST API:
  --url URL          the server (default OPENLINE_URL, else http://127.0.0.1:$PORT, PORT default 8080)
  --api-key KEY      an API key of the account (default OPENLINE_API_KEY)

  campaign create --csv FILE (--task TEXT | --pathway-id ID) [options]
      Creates a campaign from a CSV file with a phone_number column; every other column becomes
      request_data of that number ({{column}} in the task), except metadata.NAME columns, which
      become its metadata. Prints the campaign id as the last line.
      --name NAME                 campaign name (default: the CSV file name)
      --max-concurrent N          calls at once (default 10)
      --calls-per-minute N        pacing (default 60)
      --window "[DAYS] HH:MM-HH:MM [TIMEZONE]"
                                  calling window in the callee's time zone, e.g. "mon-fri 09:00-17:00"
                                  or "mon,wed 10:00-12:00 America/Chicago" (default every day)
      --retries N                 extra attempts of a number not reached (default 0)
      --wait-period DAYS          between attempts (default 1)
      --stop-when-answer          skip a number's later steps once a person answered
      --no-auto-complete          stay active when every number is done (until stopped)
      --voice ID  --from NUMBER  --first-sentence TEXT  --max-duration MINUTES  --webhook URL
      --param KEY=VALUE           any other Send Call parameter (VALUE read as JSON when it is JSON); repeatable
      --json FILE                 a JSON object of campaign fields; the flags above override it
  campaign watch ID [--interval SECONDS]
      Shows the campaign's progress until it is completed or stopped, or only retries due later
      remain (a progress bar on a terminal, else one line per change).
  campaign pause|resume|stop ID`;

export interface CampaignIo extends Output {
  /** Whether stdout is a terminal (a live progress bar) or not (one line per update). */
  isTTY?: boolean;
  /** Waits between updates of watch (tests may shorten it). */
  sleep?: (ms: number) => Promise<void>;
}

const OPTIONS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  csv: { type: 'string' },
  task: { type: 'string' },
  'pathway-id': { type: 'string' },
  name: { type: 'string' },
  'max-concurrent': { type: 'string' },
  'calls-per-minute': { type: 'string' },
  window: { type: 'string' },
  retries: { type: 'string' },
  'wait-period': { type: 'string' },
  'stop-when-answer': { type: 'boolean' },
  'no-auto-complete': { type: 'boolean' },
  voice: { type: 'string' },
  from: { type: 'string' },
  'first-sentence': { type: 'string' },
  'max-duration': { type: 'string' },
  webhook: { type: 'string' },
  param: { type: 'string', multiple: true },
  json: { type: 'string' },
  interval: { type: 'string' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** Options each command accepts beyond --url and --api-key. */
const ACCEPTS: Record<string, readonly (keyof typeof OPTIONS)[]> = {
  create: [
    'csv',
    'task',
    'pathway-id',
    'name',
    'max-concurrent',
    'calls-per-minute',
    'window',
    'retries',
    'wait-period',
    'stop-when-answer',
    'no-auto-complete',
    'voice',
    'from',
    'first-sentence',
    'max-duration',
    'webhook',
    'param',
    'json',
  ],
  watch: ['interval'],
  pause: [],
  resume: [],
  stop: [],
};

/** Runs `openline campaign ...` (argv after `campaign`). */
export async function campaignMain(
  argv: string[],
  io: CampaignIo,
  env: Record<string, string | undefined>,
): Promise<void> {
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }));
  } catch (error) {
    throw new CampaignUsageError(errorMessage(error));
  }
  const [command, ...args] = positionals;
  const accepts = command === undefined ? undefined : ACCEPTS[command];
  if (!command || !accepts) {
    throw new CampaignUsageError(command ? `Unknown command: campaign ${command}` : 'Missing campaign command');
  }
  for (const key of Object.keys(values) as (keyof typeof OPTIONS)[]) {
    if (key !== 'url' && key !== 'api-key' && !accepts.includes(key)) {
      throw new CampaignUsageError(`campaign ${command} does not take --${key}`);
    }
  }
  const wantsId = command !== 'create';
  if (wantsId && args.length === 0) throw new CampaignUsageError(`campaign ${command} needs a campaign ID`);
  const extra = args[wantsId ? 1 : 0];
  if (extra !== undefined) throw new CampaignUsageError(`Unexpected argument: ${extra}`);
  const connection = connect(values, env);
  const id = args[0] ?? '';
  switch (command) {
    case 'create':
      return createCampaign(connection, values, io);
    case 'watch':
      return watchCampaign(connection, id, io, { intervalMs: seconds(values.interval, '--interval', 1) * 1000 });
    default:
      return changeState(connection, id, command, io);
  }
}

function connect(values: Values, env: Record<string, string | undefined>): Connection {
  const apiKey = values['api-key'] ?? env.OPENLINE_API_KEY;
  if (!apiKey) throw new CampaignUsageError('An API key is needed: --api-key KEY or OPENLINE_API_KEY');
  const raw = values.url ?? env.OPENLINE_URL ?? `http://127.0.0.1:${env.PORT ?? '8080'}`;
  const url = serverUrl(raw);
  if (!url) throw new CampaignUsageError(`--url must be an http(s) URL such as http://127.0.0.1:8080 (got ${raw})`);
  return { url, apiKey, hint: 'set --url or OPENLINE_URL' };
}

function seconds(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new CampaignUsageError(`${flag} must be a positive number of seconds`);
  return n;
}

function positive(value: string | undefined, flag: string, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) {
    throw new CampaignUsageError(`${flag} must be a ${integer ? 'whole ' : ''}number of at least 0 (got ${value})`);
  }
  return n;
}

function failure(reply: ServerReply, what: string): CliError {
  const errors = Array.isArray(reply.body.errors) ? (reply.body.errors as unknown[]).map(String) : [];
  const message = String(reply.body.message ?? `HTTP ${reply.status}`);
  return new CliError([`${what}: ${message}`, ...errors.map((e) => `  - ${e}`)].join('\n'));
}

/** A number of the CSV as the API takes it, with the file line it came from. */
interface CsvNumber {
  line: number;
  number: { phone_number: string; request_data?: Record<string, string>; metadata?: Record<string, string> };
}

const PHONE_COLUMN = 'phone_number';
const METADATA_PREFIX = 'metadata.';
/** Row problems listed before the rest are summed up. */
const MAX_REPORTED = 20;

/**
 * Reads the campaign CSV: a header row with a phone_number column (any case), then one number
 * per row. Other columns become the number's request_data (empty cells are left out) and
 * `metadata.NAME` columns its metadata. Every bad row is reported with its line and column.
 */
export function readNumbersCsv(file: string): CsvNumber[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`Cannot read the CSV file ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  let rows: { record: Record<string, string>; info: { lines: number } }[];
  try {
    rows = parseCsv(text, {
      columns: (header: string[]) => header.map((h) => h.trim()),
      skip_empty_lines: true,
      trim: true,
      bom: true,
      info: true,
    }) as { record: Record<string, string>; info: { lines: number } }[];
  } catch (error) {
    if (error instanceof CsvError) throw new CliError(`${file}: ${error.message}`);
    throw error;
  }
  const header = text.replace(/^\uFEFF/, '').split(/\r?\n/, 1)[0] ?? '';
  const first = rows[0]?.record;
  if (!first)
    throw new CliError(`${file}: no numbers (a header row with a ${PHONE_COLUMN} column, then one row per number)`);
  const phoneKey = Object.keys(first).find((k) => k.toLowerCase() === PHONE_COLUMN);
  if (!phoneKey) {
    throw new CliError(`${file}: no ${PHONE_COLUMN} column (the header has: ${header || 'nothing'})`);
  }
  const problems: string[] = [];
  const numbers: CsvNumber[] = [];
  const seen = new Map<string, number>();
  for (const { record, info } of rows) {
    const line = info.lines;
    const raw = record[phoneKey] ?? '';
    const phone = normalizePhone(raw);
    if (!phone.ok) {
      problems.push(`line ${line}, column ${PHONE_COLUMN}: ${raw === '' ? 'empty' : `"${raw}"`}: ${phone.reason}`);
      continue;
    }
    const earlier = seen.get(phone.e164);
    if (earlier !== undefined) {
      problems.push(`line ${line}, column ${PHONE_COLUMN}: ${phone.e164} is already on line ${earlier}`);
      continue;
    }
    seen.set(phone.e164, line);
    const requestData: Record<string, string> = {};
    const metadata: Record<string, string> = {};
    for (const [column, value] of Object.entries(record)) {
      if (column === phoneKey || value === '') continue;
      if (column.startsWith(METADATA_PREFIX)) {
        const name = column.slice(METADATA_PREFIX.length);
        if (name === '') problems.push(`line ${line}, column ${column}: a metadata column needs a name`);
        else metadata[name] = value;
      } else if (column === '') {
        problems.push(`line ${line}: a value in a column without a header`);
      } else {
        requestData[column] = value;
      }
    }
    numbers.push({
      line,
      number: {
        phone_number: phone.e164,
        ...(Object.keys(requestData).length > 0 ? { request_data: requestData } : {}),
        ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
      },
    });
  }
  if (problems.length > 0) {
    const shown = problems.slice(0, MAX_REPORTED);
    const more = problems.length - shown.length;
    throw new CliError(
      [
        `${file}: ${problems.length} bad row${problems.length === 1 ? '' : 's'}; nothing was created`,
        ...shown.map((p) => `  - ${p}`),
        ...(more > 0 ? [`  ... and ${more} more`] : []),
      ].join('\n'),
    );
  }
  return numbers;
}

/** "[DAYS] HH:MM-HH:MM [TIMEZONE]": DAYS is a range (mon-fri) or a list (mon,wed,fri). */
export function parseWindow(text: string): { start: string; end: string; days?: string[]; timezone?: string } {
  const usage = `--window must look like "mon-fri 09:00-17:00" or "09:00-17:00 America/New_York" (got "${text}")`;
  let range: RegExpExecArray | null = null;
  let days: string[] | undefined;
  let timezone: string | undefined;
  for (const token of text.trim().split(/\s+/)) {
    const times = /^(\d{2}:\d{2})-(\d{2}:\d{2})$/.exec(token);
    const lower = token.toLowerCase();
    if (times && !range) range = times;
    else if (!days && /^[a-z]{3}(-[a-z]{3}|(,[a-z]{3})*)$/.test(lower)) days = expandDays(lower, usage);
    else if (!timezone && /[A-Za-z]/.test(token) && (token.includes('/') || token === 'UTC')) timezone = token;
    else throw new CampaignUsageError(usage);
  }
  if (!range) throw new CampaignUsageError(usage);
  return {
    start: range[1]!,
    end: range[2]!,
    ...(days ? { days } : {}),
    ...(timezone ? { timezone } : {}),
  };
}

function expandDays(spec: string, usage: string): string[] {
  const index = (d: string) => {
    const i = (WEEKDAYS as readonly string[]).indexOf(d);
    if (i < 0) throw new CampaignUsageError(`${usage}: unknown day ${d}`);
    return i;
  };
  if (spec.includes('-')) {
    const [from, to] = spec.split('-') as [string, string];
    const days: string[] = [];
    for (let i = index(from); ; i = (i + 1) % 7) {
      days.push(WEEKDAYS[i]!);
      if (i === index(to)) return days;
    }
  }
  return spec.split(',').map((d) => WEEKDAYS[index(d)]!);
}

function readJsonObject(file: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new CliError(`--json ${file}: ${errorMessage(error)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new CliError(`--json ${file}: must hold a JSON object of campaign fields`);
  }
  return parsed as Record<string, unknown>;
}

/** --param KEY=VALUE: VALUE is JSON when it parses as JSON (numbers, booleans, objects), else text. */
function parseParams(params: readonly string[] | undefined): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const item of params ?? []) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new CampaignUsageError(`--param must be KEY=VALUE (got ${item})`);
    const value = item.slice(eq + 1);
    let parsed: unknown = value;
    try {
      parsed = JSON.parse(value);
    } catch {
      // plain text
    }
    result[item.slice(0, eq)] = parsed;
  }
  return result;
}

/** The body of POST /v1/campaigns from the command line. */
export function campaignBody(values: Values, numbers: CsvNumber[]): Record<string, unknown> {
  const base = values.json ? readJsonObject(values.json) : {};
  const body: Record<string, unknown> = { ...base };
  if (values.csv) body.name = (values.csv.split(/[\\/]/).pop() ?? 'campaign').replace(/\.csv$/i, '') || 'campaign';
  if (base.name !== undefined) body.name = base.name;
  if (values.name !== undefined) body.name = values.name;
  if (values.task !== undefined) body.task = values.task;
  if (values['pathway-id'] !== undefined) body.pathway_id = values['pathway-id'];
  const basePacing = typeof base.pacing === 'object' && base.pacing !== null ? base.pacing : {};
  const maxConcurrent = positive(values['max-concurrent'], '--max-concurrent', true);
  const perMinute = positive(values['calls-per-minute'], '--calls-per-minute', false);
  if (maxConcurrent !== undefined || perMinute !== undefined) {
    body.pacing = {
      ...basePacing,
      ...(maxConcurrent !== undefined ? { max_concurrent: maxConcurrent } : {}),
      ...(perMinute !== undefined ? { calls_per_minute: perMinute } : {}),
    };
  }
  if (values.window !== undefined) body.calling_window = parseWindow(values.window);
  const retries = positive(values.retries, '--retries', true);
  const waitPeriod = positive(values['wait-period'], '--wait-period', false);
  if (retries !== undefined || waitPeriod !== undefined) {
    const baseSequence = typeof base.sequence === 'object' && base.sequence !== null ? base.sequence : {};
    body.sequence = {
      ...baseSequence,
      ...(retries !== undefined ? { retries } : {}),
      ...(waitPeriod !== undefined ? { wait_period: waitPeriod } : {}),
    };
  }
  if (values['stop-when-answer']) body.stop_when_answer = true;
  if (values['no-auto-complete']) body.auto_mark_complete = false;
  if (values.voice !== undefined) body.voice = values.voice;
  if (values.from !== undefined) body.from = values.from;
  if (values['first-sentence'] !== undefined) body.first_sentence = values['first-sentence'];
  const maxDuration = positive(values['max-duration'], '--max-duration', false);
  if (maxDuration !== undefined) body.max_duration = maxDuration;
  if (values.webhook !== undefined) body.webhook = values.webhook;
  Object.assign(body, parseParams(values.param));
  body.numbers = numbers.map((n) => n.number);
  const hasSteps = Array.isArray(body.sequences) && body.sequences.length > 0;
  if (body.task === undefined && body.pathway_id === undefined && !hasSteps) {
    throw new CampaignUsageError('campaign create needs --task TEXT or --pathway-id ID (or sequences in --json)');
  }
  return body;
}

/** The server's numbers[i] in error messages, told as the CSV line they came from. */
function withLines(message: string, numbers: CsvNumber[]): string {
  return message.replace(/numbers\[(\d+)\]/g, (whole, i: string) => {
    const line = numbers[Number(i)]?.line;
    return line === undefined ? whole : `CSV line ${line} (${whole})`;
  });
}

async function createCampaign(connection: Connection, values: Values, io: CampaignIo): Promise<void> {
  if (!values.csv) throw new CampaignUsageError('campaign create needs --csv FILE');
  const numbers = readNumbersCsv(values.csv);
  const body = campaignBody(values, numbers);
  const reply = await request(connection, 'POST', '/v1/campaigns', body);
  if (reply.status !== 200) {
    const error = failure(reply, 'The server did not create the campaign');
    throw new CliError(withLines(error.message, numbers));
  }
  const id = String(reply.body.campaign_id);
  io.out(`Created campaign ${id} with ${numbers.length} number${numbers.length === 1 ? '' : 's'}.`);
  io.out(`Watch it with: openline campaign watch ${id}`);
  // Last line on purpose: scripts take it with `tail -n 1`.
  io.out(id);
}

async function changeState(connection: Connection, id: string, action: string, io: CampaignIo): Promise<void> {
  const reply = await request(connection, 'POST', `/v1/campaigns/${encodeURIComponent(id)}/${action}`);
  if (reply.status !== 200) throw failure(reply, `Could not ${action} campaign ${id}`);
  io.out(`Campaign ${id} is ${String(reply.body.campaign_state)}.`);
}

/** GET /v1/campaigns/{id}/progress. */
export type Progress = CampaignProgress;

/** The counters of one update, as one line. */
export function describeProgress(p: Progress): string {
  const c = p.calls;
  return (
    `${p.campaign_state} | numbers ${p.numbers.finished}/${p.numbers.total} finished, ${p.numbers.called} called` +
    `${p.numbers.waiting_retry ? `, ${p.numbers.waiting_retry} waiting for a retry` : ''} | dialled ${c.placed} | ` +
    `live ${c.live} | completed ${c.completed} | answered ${c.answered} | voicemail ${c.voicemail} | ` +
    `unknown ${c.unknown} | no answer ${c.no_answer} | failed ${c.failed}`
  );
}

const FINAL_STATES = new Set(['completed', 'stopped']);

async function watchCampaign(
  connection: Connection,
  id: string,
  io: CampaignIo,
  options: { intervalMs: number },
): Promise<void> {
  const sleep = io.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const path = `/v1/campaigns/${encodeURIComponent(id)}/progress`;
  let bar: cliProgress.SingleBar | undefined;
  let last = '';
  let retriesOnly: string | undefined;
  try {
    for (;;) {
      const reply = await request(connection, 'GET', path);
      if (reply.status !== 200) throw failure(reply, `Could not read campaign ${id}`);
      const progress = reply.body as unknown as Progress;
      const line = describeProgress(progress);
      const done = FINAL_STATES.has(progress.campaign_state);
      if (io.isTTY) {
        const c = progress.calls;
        const payload = {
          state: progress.campaign_state,
          dialled: c.placed,
          live: c.live,
          completed: c.completed,
          answered: c.answered,
          voicemail: c.voicemail,
          no_answer: c.no_answer,
          failed: c.failed,
        };
        if (!bar) {
          bar = new cliProgress.SingleBar(
            {
              format:
                '{bar} {value}/{total} numbers | {state} | dialled {dialled} | live {live} | completed {completed} | ' +
                'answered {answered} | voicemail {voicemail} | no answer {no_answer} | failed {failed}',
              hideCursor: true,
              stream: process.stdout,
            },
            cliProgress.Presets.shades_classic,
          );
          bar.start(progress.numbers.total, progress.numbers.finished, payload);
        } else {
          bar.update(progress.numbers.finished, payload);
        }
      } else if (line !== last) {
        io.out(line);
      }
      last = line;
      if (done) break;
      // Nothing under way and every number left waits for a retry later (a day, say): watching on
      // would only wait. Say so, and when, and end.
      const n = progress.numbers;
      if (progress.calls.live === 0 && n.dialing === 0 && n.pending > 0 && n.pending === n.waiting_retry) {
        retriesOnly = `${n.waiting_retry} number(s) wait for a retry, the first at ${n.next_retry_at ?? 'a later time'}`;
        break;
      }
      await sleep(options.intervalMs);
    }
  } finally {
    bar?.stop();
  }
  if (retriesOnly) {
    io.out(`Campaign ${id}: only retries remain: ${retriesOnly}. Watch it again then: openline campaign watch ${id}`);
    return;
  }
  io.out(`Campaign ${id} ${last.split(' | ', 1)[0] ?? ''}: ${last.split(' | ').slice(1).join(', ')}`);
}
