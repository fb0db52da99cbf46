import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { createTestApp, waitForCall, type TestApp } from '../../src/testing/harness.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import type { SipMessage, SipRequest } from '../../src/carriers/sip/message.js';
import { isRequest, udpPeer, type UdpPeer } from './udp-peer.js';

type Json = Record<string, unknown>;

/** T1 for these tests: 64 T1 (timers B, F, H and the wait after a CANCEL) is 1.28 s rather than 32. */
const T1_MS = 20;

/**
 * RFC 3261's transactions and dialogs against a peer speaking raw SIP over UDP: the trunk of
 * outbound calls and a caller, saying what real peers sometimes say (nothing after a CANCEL, a
 * request for a dialog that is gone, a challenge to a BYE).
 */
describe('SIP transactions and dialogs', () => {
  let t: TestApp;
  let dir: string;
  let trunk: UdpPeer;
  let ourPort: number;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-sip-transactions-'));
    trunk = await udpPeer();
    ourPort = await freeUdpPort();
    const env = {
      DATA_DIR: dir,
      OPENLINE_SIP_LISTEN: `127.0.0.1:${ourPort}`,
      OPENLINE_SIP_TRUNK: `sip:alice:s3cret@127.0.0.1:${trunk.port}`,
      OPENLINE_RTP_PORTS: '34000-34199',
    };
    t = await createTestApp({ env, config: { sip: { ...loadConfig(env).sip, t1Ms: T1_MS } } });
    await t.services.startWorkers();
  });
  after(async () => {
    await t?.close();
    trunk?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function call(to: string, body: Json = {}): Promise<string> {
    const r = await t.request('POST', '/v1/calls', { phone_number: to, task: 'Confirm the appointment.', ...body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return String(r.body.call_id);
  }

  const inviteTo = (number: string) => (m: SipMessage) => isRequest('INVITE')(m) && m.uri.startsWith(`sip:${number}@`);

  /** Whether a UDP port of loopback can be bound (the call's RTP socket let it go). */
  async function portFree(port: number): Promise<boolean> {
    const socket = dgram.createSocket('udp4');
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(port, '127.0.0.1', resolve);
      });
      return true;
    } catch {
      return false;
    } finally {
      socket.close();
    }
  }

  it('a ringing call stopped through the API ends when the trunk never answers its CANCEL nor the INVITE; its RTP port is let go', async () => {
    const id = await call('+14155551501');
    const invite = (await trunk.next('the INVITE', inviteTo('+14155551501'))) as SipRequest;
    trunk.respond(invite, '100 Trying');
    trunk.respond(invite, '180 Ringing');
    const rtpPort = Number(/m=audio (\d+)/.exec(invite.body)?.[1]);
    assert.equal(await portFree(rtpPort), false, 'the call holds its RTP port while it rings');
    assert.equal((await t.request('POST', `/v1/calls/${id}/stop`)).status, 200);
    // The trunk hears the CANCEL and never answers it, nor the INVITE.
    await trunk.next('the CANCEL', isRequest('CANCEL'));
    const record = await waitForCall(t, id);
    assert.equal(record.status, 'canceled');
    assert.equal(record.completed, true);
    assert.equal(await portFree(rtpPort), true, 'the RTP port is free again');
  });
});
