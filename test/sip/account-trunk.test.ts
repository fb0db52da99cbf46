import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestApp, waitForCall } from '../../src/testing/harness.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { defaultPublicAddress } from '../../src/carriers/sip/service.js';
import { HAS_SIPP, SCENARIOS, sipp, trace, until } from './sipp-run.js';

type Json = Record<string, unknown>;

/**
 * This machine's own non-loopback address: loopback is always allowed to call in, so the trunk
 * plays from this address to show that an account's trunk is allowed by its own address. The
 * packets stay inside the machine.
 */
const HOST = defaultPublicAddress('0.0.0.0');

/** An INVITE from `socket` to `number`; resolves with the status of the final answer. */
async function invite(socket: dgram.Socket, ourPort: number, number: string): Promise<number> {
  const { address, port } = socket.address();
  const callId = `${number}-${Date.now()}@test`;
  const answer = new Promise<number>((resolve) => {
    const onMessage = (data: Buffer) => {
      const text = data.toString();
      const status = Number(/^SIP\/2\.0 (\d{3})/.exec(text)?.[1]);
      if (status >= 200 && text.includes(callId)) {
        socket.off('message', onMessage);
        resolve(status);
      }
    };
    socket.on('message', onMessage);
  });
  socket.send(
    Buffer.from(
      [
        `INVITE sip:${number}@${HOST}:${ourPort} SIP/2.0`,
        `Via: SIP/2.0/UDP ${address}:${port};branch=z9hG4bK${Date.now()}`,
        `From: <sip:+14155550100@${address}>;tag=a1`,
        `To: <sip:${number}@${HOST}:${ourPort}>`,
        `Call-ID: ${callId}`,
        'CSeq: 1 INVITE',
        'Content-Type: application/sdp',
        '',
        `v=0\r\no=- 1 1 IN IP4 ${address}\r\ns=-\r\nc=IN IP4 ${address}\r\nt=0 0\r\nm=audio 39590 RTP/AVP 0\r\n`,
      ].join('\r\n'),
    ),
    ourPort,
    HOST,
  );
  return answer;
}

/**
 * An account's own SIP trunk (POST /v1/accounts with "provider": "sip") that wants registration
 * (`;register=true`): sipp plays the provider's registrar, from an address that is neither
 * loopback nor the server's trunk nor OPENLINE_SIP_ALLOW. Openline registers with digest and
 * renews, the number tied to the trunk (Update Inbound Details with its encrypted_key) takes the
 * trunk's call, other numbers refuse the trunk's INVITEs with 403, and shutdown unregisters.
 */
describe(
  "SIP: an account's own trunk registers and calls in from its address",
  {
    skip:
      (!HAS_SIPP && 'sipp is not installed') ||
      (HOST === '127.0.0.1' && 'this machine has no address other than loopback'),
  },
  () => {
    it('ties a number to the trunk, registers, takes its call, refuses it elsewhere, unregisters on shutdown', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-sip-account-trunk-'));
      const registrarPort = await freeUdpPort();
      const ourPort = await freeUdpPort();
      const t = await createTestApp({
        env: { DATA_DIR: dir, OPENLINE_SIP_LISTEN: `${HOST}:${ourPort}`, OPENLINE_RTP_PORTS: '39500-39589' },
      });
      let closed = false;
      const socket = dgram.createSocket('udp4');
      try {
        const stored = await t.request('POST', '/v1/accounts', {
          provider: 'sip',
          trunk: `sip:alice:s3cret@${HOST}:${registrarPort};register=true`,
        });
        assert.equal(stored.status, 200, JSON.stringify(stored.body));
        const key = { headers: { encrypted_key: String(stored.body.encrypted_key) } };

        // A number on the trunk: bought on the sandbox, then tied to the trunk by Update Inbound Details.
        const bought = await t.request('POST', '/v1/inbound/purchase', {
          area_code: '628',
          prompt: 'You are the front desk of Sunny Dental. Greet the caller.',
        });
        assert.equal(bought.status, 200, JSON.stringify(bought.body));
        const number = String(bought.body.phone_number);
        // Clients send the header along everywhere: a key that is not the account's changes nothing.
        const unknownKey = await t.request(
          'POST',
          `/v1/inbound/${encodeURIComponent(number)}`,
          { first_sentence: 'Hello from Sunny Dental.' },
          { headers: { encrypted_key: 'ek_nobody' } },
        );
        assert.equal(unknownKey.status, 200, JSON.stringify(unknownKey.body));
        assert.equal((await t.request('GET', `/v1/inbound/${encodeURIComponent(number)}`)).body.carrier, 'sandbox');
        const tied = await t.request('POST', `/v1/inbound/${encodeURIComponent(number)}`, { record: true }, key);
        assert.equal(tied.status, 200, JSON.stringify(tied.body));
        const shown = await t.request('GET', `/v1/inbound/${encodeURIComponent(number)}`);
        assert.equal(shown.body.carrier, 'sip');
        assert.equal(shown.body.first_sentence, 'Hello from Sunny Dental.', 'tying the number kept its settings');
        // While a number uses the trunk, the trunk cannot be deleted.
        assert.equal((await t.request('DELETE', `/v1/accounts/${String(stored.body.encrypted_key)}`)).status, 409);

        // Taking one of the trunk's numbers with its key: nothing is bought, the number must be named.
        const noNumber = await t.request('POST', '/v1/inbound/purchase', { prompt: 'Hi.' }, key);
        assert.equal(noNumber.status, 400);
        assert.match(JSON.stringify(noNumber.body), /phone_number/);
        const own = await t.request(
          'POST',
          '/v1/inbound/purchase',
          { phone_number: '+1 (415) 555-7788', prompt: 'Hi.' },
          key,
        );
        assert.equal(own.status, 200, JSON.stringify(own.body));
        assert.equal(own.body.phone_number, '+14155557788');
        assert.equal(own.body.carrier, 'sip');

        const other = await t.request('POST', '/v1/inbound/purchase', { area_code: '628', prompt: 'Hi.' });
        const otherNumber = String(other.body.phone_number);

        const registrar = sipp(
          [
            '-sf',
            path.join(SCENARIOS, 'registrar.xml'),
            '-i',
            HOST,
            '-p',
            String(registrarPort),
            '-mp',
            '39600',
            '-s',
            number,
          ],
          dir,
          'account-registrar',
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        await t.services.startWorkers();
        await until('the registrar to hang up the call', () => /BYE sip:/.test(trace(registrar)), 40_000).catch(
          (error: Error) => assert.fail(`${error.message}\n${trace(registrar)}`),
        );
        const list = await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`);
        const record = await waitForCall(t, String((list.body.calls as Json[])[0]?.call_id));
        assert.equal(record.inbound, true);
        assert.equal(record.call_ended_by, 'USER');

        // From the trunk's address, only the trunk's numbers: another number of the account, or a
        // number nobody holds, is refused alike.
        await new Promise<void>((resolve) => socket.bind(0, HOST, resolve));
        assert.equal(await invite(socket, ourPort, otherNumber), 403);
        assert.equal(await invite(socket, ourPort, '+19995550100'), 403);

        await t.close();
        closed = true;
        assert.equal(await registrar.exit, 0, trace(registrar));
        const log = trace(registrar);
        // The first registration, its renewal, the removal: each a challenge and its answer.
        assert.equal((log.match(/^REGISTER sip:[^ ]+ SIP\/2\.0/gm) ?? []).length, 6, log);
        assert.match(log, /Authorization: Digest username="alice", realm="registrar\.openline\.test"/);
        assert.match(log, new RegExp(`Contact: <sip:alice@${HOST.replace(/\./g, '\\.')}:${ourPort}>`));
        assert.match(log, /Expires: 0/);
      } finally {
        socket.close();
        if (!closed) await t.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
