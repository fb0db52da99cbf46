import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { alawToLinear, dbfs } from '../../src/media/audio.js';
import { parseWav } from '../../src/media/wav.js';
import { freeUdpPort } from '../../src/testing/ports.js';

/** The sipp scenarios of the SIP tests. */
export const SCENARIOS = path.resolve('test/sip/scenarios');
export const HAS_SIPP = spawnSync('sipp', ['-v']).error === undefined;

export interface Sipp {
  child: ChildProcess;
  exit: Promise<number | null>;
  log: string;
}

/** Runs sipp for `calls` calls (one by default) with `args`; its message trace goes to a file for failure reports. */
export function sipp(args: string[], dir: string, name: string, calls = 1): Sipp {
  const log = path.join(dir, `${name}.log`);
  const child = spawn(
    'sipp',
    [
      ...args,
      '-m',
      String(calls),
      '-nostdin',
      '-timeout',
      '60s',
      '-trace_msg',
      '-message_file',
      log,
      '-trace_err',
      '-error_file',
      `${log}.err`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exit, log };
}

/**
 * sipp as a caller over UDP: `scenario` (a file of SCENARIOS, or sipp's built-in `uac`) calls
 * `number` at Openline's SIP port `ourPort` from a free port of its own; `extra` adds media and
 * timing arguments (`-mp`, `-d`, `-rtp_echo`, ...).
 */
export async function sippCaller(
  scenario: string,
  number: string,
  ourPort: number,
  extra: string[],
  dir: string,
  name: string,
): Promise<Sipp> {
  const script = scenario === 'uac' ? ['-sn', 'uac'] : ['-sf', path.join(SCENARIOS, scenario)];
  const own = ['-i', '127.0.0.1', '-p', String(await freeUdpPort())];
  return sipp([...script, `127.0.0.1:${ourPort}`, ...own, '-s', number, ...extra], dir, name);
}

/** sipp's message trace (and its error log), for assertions and failure reports. */
export const trace = (s: Sipp): string =>
  (fs.existsSync(s.log) ? fs.readFileSync(s.log, 'utf8') : '(no trace)') +
  (fs.existsSync(`${s.log}.err`) ? fs.readFileSync(`${s.log}.err`, 'utf8') : '');

/** Waits until `test` holds, polling every 100 ms; throws naming `what` after `ms`. */
export async function until(what: string, test: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await test()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The pcaps Debian's sip-tester installs: speech in G.711 A-law, and RFC 4733 key presses. */
export const PCAPS = '/usr/share/sip-tester';
export const HAS_PCAPS =
  fs.existsSync(path.join(PCAPS, 'g711a.pcap')) && fs.existsSync(path.join(PCAPS, 'dtmf_2833_1.pcap'));

/** The packet records of a little-endian pcap of Ethernet frames: capture time and frame bytes. */
function pcapRecords(file: string): { header: Buffer; records: { atUs: number; record: Buffer }[] } {
  const data = fs.readFileSync(file);
  assert.equal(data.readUInt32LE(0), 0xa1b2c3d4, 'a little-endian pcap');
  assert.equal(data.readUInt32LE(20), 1, 'of Ethernet frames');
  const records: { atUs: number; record: Buffer }[] = [];
  for (let offset = 24; offset + 16 <= data.length;) {
    const length = data.readUInt32LE(offset + 8);
    const atUs = data.readUInt32LE(offset) * 1e6 + data.readUInt32LE(offset + 4);
    records.push({ atUs, record: data.subarray(offset, offset + 16 + length) });
    offset += 16 + length;
  }
  return { header: data.subarray(0, 24), records };
}

/** The RTP payload of one pcap record (Ethernet, IPv4, UDP, RTP). */
function rtpPayload(record: Buffer): Buffer {
  const ip = record.subarray(16 + 14);
  const udp = ip.subarray((ip[0]! & 0x0f) * 4);
  const rtp = udp.subarray(8);
  return rtp.subarray(12 + (rtp[0]! & 0x0f) * 4);
}

/** The RTP payloads of a pcap of Ethernet, IPv4 and UDP packets. */
export function rtpPayloads(file: string): Buffer[] {
  return pcapRecords(file).records.map((r) => rtpPayload(r.record));
}

/**
 * Writes to `out` the part of an A-law speech pcap that starts where its speech starts and lasts
 * `ms`: a short utterance ("uh huh") cut from real speech, for sipp to play.
 */
export function pcapSpeechSlice(file: string, out: string, ms: number): void {
  const { header, records } = pcapRecords(file);
  const pcm = Int16Array.from(Buffer.concat(records.map((r) => rtpPayload(r.record))), (byte) => alawToLinear(byte));
  const onset = speechOnsetMs(pcm, 8000);
  assert.ok(onset !== undefined, `speech in ${file}`);
  const start = records[0]!.atUs + onset * 1000;
  const kept = records.filter((r) => r.atUs >= start && r.atUs - start < ms * 1000);
  fs.writeFileSync(out, Buffer.concat([header, ...kept.map((r) => r.record)]));
}

/**
 * Where speech starts (ms), from `fromMs` on: the first 150 ms louder than -30 dBFS (the line
 * noise and breaths before a sentence are quieter). Undefined if it never does.
 */
export function speechOnsetMs(pcm: Int16Array, sampleRate: number, fromMs = 0): number | undefined {
  const window = (sampleRate * 150) / 1000;
  const step = sampleRate / 100;
  for (let at = (fromMs * sampleRate) / 1000; at + window <= pcm.length; at += step)
    if (dbfs(pcm.subarray(at, at + window)) > -30) return (at * 1000) / sampleRate;
  return undefined;
}

/** Milliseconds of audio louder than -40 dBFS, measured over 10 ms windows from `fromMs` to `toMs`. */
export function loudMs(pcm: Int16Array, sampleRate: number, fromMs = 0, toMs = Infinity): number {
  const window = sampleRate / 100;
  const end = Math.min(pcm.length, (toMs * sampleRate) / 1000);
  let loud = 0;
  for (let at = (fromMs * sampleRate) / 1000; at + window <= end; at += window)
    if (dbfs(pcm.subarray(at, at + window)) > -40) loud += 10;
  return loud;
}

/** The two sides of a call's stereo recording: the caller (left) and the agent (right). */
export function recordingChannels(file: string): { caller: Int16Array; agent: Int16Array; sampleRate: number } {
  const wav = parseWav(fs.readFileSync(file));
  assert.equal(wav.channels, 2);
  const caller = new Int16Array(wav.samples.length / 2);
  const agent = new Int16Array(wav.samples.length / 2);
  for (let i = 0; i < caller.length; i++) {
    caller[i] = wav.samples[2 * i]!;
    agent[i] = wav.samples[2 * i + 1]!;
  }
  return { caller, agent, sampleRate: wav.sampleRate };
}
