import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestApp, waitForCall } from '../../src/testing/harness.js';
import { freeTcpPort, freeUdpPort } from '../../src/testing/ports.js';
import { HAS_SIPP, SCENARIOS, sipp, trace, until } from './sipp-run.js';

type Json = Record<string, unknown>;

/**
 * Registration with a trunk (OPENLINE_SIP_TRUNK with `;register=true`): sipp plays a provider's
 * registrar that challenges every REGISTER and verifies the digest answer, grants a short time
 * that Openline must renew, calls the account's number at the registered Contact, and expects the
 * registration removed at shutdown.
 */
describe('SIP registration with the trunk', { skip: !HAS_SIPP && 'sipp is not installed' }, () => {
  for (const transport of ['udp', 'tcp'] as const)
    it(`over ${transport}: registers with digest, renews before expiry, takes a call on the registered contact, unregisters on shutdown`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openline-sip-register-'));
      const registrarPort = transport === 'tcp' ? await freeTcpPort() : await freeUdpPort();
      const t = await createTestApp({
        env: {
          DATA_DIR: dir,
          OPENLINE_SIP_LISTEN: `127.0.0.1:${await freeUdpPort()}`,
          OPENLINE_SIP_TRUNK: `sip:alice:s3cret@127.0.0.1:${registrarPort};transport=${transport};register=true`,
          OPENLINE_RTP_PORTS: transport === 'tcp' ? '36500-36999' : '36000-36499',
        },
      });
      let closed = false;
      try {
        const bought = await t.request('POST', '/v1/inbound/purchase', {
          area_code: '628',
          prompt: 'You are the front desk of Sunny Dental. Greet the caller.',
        });
        assert.equal(bought.status, 200, JSON.stringify(bought.body));
        const number = String(bought.body.phone_number);
        const registrar = sipp(
          [
            '-sf',
            path.join(SCENARIOS, 'registrar.xml'),
            '-i',
            '127.0.0.1',
            '-t',
            transport === 'tcp' ? 't1' : 'u1',
            '-p',
            String(registrarPort),
            '-mp',
            transport === 'tcp' ? '37100' : '37000',
            '-s',
            number,
          ],
          dir,
          `registrar-${transport}`,
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        // SIP starts with the workers: the REGISTER goes out then.
        await t.services.startWorkers();
        await until('the registrar to hang up the call', () => /BYE sip:/.test(trace(registrar)), 40_000).catch(
          (error: Error) => assert.fail(`${error.message}\n${trace(registrar)}`),
        );
        const list = await t.request('GET', `/v1/calls?inbound=true&to_number=${encodeURIComponent(number)}`);
        const id = String((list.body.calls as Json[])[0]?.call_id);
        const record = await waitForCall(t, id);
        assert.equal(record.inbound, true);
        assert.equal(record.call_ended_by, 'USER');
        // Shutdown removes the registration.
        await t.close();
        closed = true;
        assert.equal(await registrar.exit, 0, trace(registrar));
        const log = trace(registrar);
        const registers = log.match(/^REGISTER sip:127\.0\.0\.1:\d+ SIP\/2\.0/gm) ?? [];
        // Twice per registration (the challenge, then the answer): the first, its renewal, the removal.
        assert.equal(registers.length, 6, log);
        assert.match(log, /Authorization: Digest username="alice", realm="registrar\.openline\.test"/);
        assert.match(
          log,
          transport === 'tcp'
            ? /REGISTER sip:[^\n]*\r?\nVia: SIP\/2\.0\/TCP [\s\S]*Contact: <sip:alice@127\.0\.0\.1:\d+;transport=tcp>/
            : /Contact: <sip:alice@127\.0\.0\.1:\d+>/,
        );
        assert.match(log, /Expires: 0/);
      } finally {
        if (!closed) await t.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
});
