import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { SipEndpoint } from '../../src/carriers/sip/endpoint.js';
import { SipCarrier } from '../../src/carriers/sip/carrier.js';
import { cseqOf, header, type SipMessage, type SipRequest } from '../../src/carriers/sip/message.js';
import type { AudioLeg } from '../../src/media/audio-leg.js';
import type { CallRequest } from '../../src/schemas/call-request.js';
import type { DialResult } from '../../src/carriers/types.js';
import { audioSdp, isRequest, udpPeer, type UdpPeer } from './udp-peer.js';
import { until } from './sipp-run.js';

/**
 * Openline as the caller (the UAC of RFC 3261) against a trunk speaking raw SIP over UDP: what a
 * real trunk sometimes does to an INVITE (no provisional response before the caller gives up, a
 * 200 OK crossing the CANCEL or coming after it) and what Openline must then say.
 *
 * Every test has its own endpoint, carrier and trunk on ports the system picks, and RTP ports from
 * a range the carrier skips through when one is taken: nothing clashes with SIP tests running at
 * the same time.
 */

/** T1: retransmissions at 100, 300, 700 ms...; 64 T1 (timer B, the wait after a CANCEL) is 6.4 s. */
const T1_MS = 100;

interface Setup {
  endpoint: SipEndpoint;
  carrier: SipCarrier;
  trunk: UdpPeer;
  /** Hangs up the calls that connected, as their agent does, in order. */
  hangups: (() => Promise<void>)[];
}

const opened: Setup[] = [];

async function setup(
  options: { t1Ms?: number; accountTrunk?: boolean; allowPrivateAddresses?: boolean } = {},
): Promise<Setup> {
  const trunk = await udpPeer();
  const hangups: (() => Promise<void>)[] = [];
  // UDP on a port the system picks, TCP on the same number: taken by someone else now and then.
  let endpoint: SipEndpoint | undefined;
  for (let attempt = 0; !endpoint; attempt++)
    endpoint = await SipEndpoint.listen({ host: '127.0.0.1', port: 0, t1Ms: options.t1Ms ?? T1_MS }).catch(
      (error: unknown) => {
        if (attempt >= 10 || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
        return undefined;
      },
    );
  const trunkAt = { host: '127.0.0.1', port: trunk.port, transport: 'udp' } as const;
  const carrier = new SipCarrier({
    endpoint,
    // The trunk as the server's (OPENLINE_SIP_TRUNK), or as an account's own.
    ...(options.accountTrunk ? { trunkFor: () => Promise.resolve(trunkAt) } : { trunk: trunkAt }),
    ...(options.allowPrivateAddresses !== undefined && { allowPrivateAddresses: options.allowPrivateAddresses }),
    rtpPorts: { min: 36200, max: 36399 },
    rtpHost: '127.0.0.1',
    // Calls that connect get a leg nobody uses: these tests are about the signalling.
    audioLeg: (_transport, _request, _callId, control) => {
      hangups.push(control.hangup);
      return {} as AudioLeg;
    },
  });
  const s = { endpoint, carrier, trunk, hangups };
  opened.push(s);
  return s;
}

afterEach(async () => {
  for (const s of opened.splice(0)) {
    await s.carrier.close();
    s.trunk.close();
  }
});

/** Places a call to `to` through the setup's trunk; `stop` aborts it as the API's stop does. */
function dial(s: Setup, to: string): { result: Promise<DialResult>; stop: AbortController } {
  const stop = new AbortController();
  const result = s.carrier.dial({
    callId: `uac-${to}`,
    to,
    from: null,
    ringTimeoutMs: 60_000,
    signal: stop.signal,
    request: {} as CallRequest,
  });
  return { result, stop };
}

const forCall = (to: string) => (m: SipMessage) => m.kind === 'request' && m.uri.startsWith(`sip:${to}@`);
const request = (method: string, to?: string) => (m: SipMessage) =>
  isRequest(method)(m) && (to === undefined || header(m, 'to')?.includes(`sip:${to}@`) === true);

describe("SIP as the caller: an account's own trunk", () => {
  it('is called at a public address only: one on loopback is refused before any packet, unless private addresses are allowed', async () => {
    const guarded = await setup({ accountTrunk: true });
    const refused = await dial(guarded, '+14155552150').result;
    assert.equal(refused.status, 'failed');
    assert.match('reason' in refused ? String(refused.reason) : '', /account's SIP trunk .*loopback.* not allowed/);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(guarded.trunk.inbox.length, 0, 'nothing was sent to the loopback trunk');

    const allowed = await setup({ accountTrunk: true, allowPrivateAddresses: true });
    const to = '+14155552151';
    const call = dial(allowed, to);
    const invite = (await allowed.trunk.next('the INVITE', forCall(to))) as SipRequest;
    allowed.trunk.respond(invite, '486 Busy Here');
    await allowed.trunk.next('the ACK of the 486', request('ACK', to));
    assert.equal((await call.result).status, 'busy');
  });
});

describe('SIP as the caller: CANCEL', () => {
  it('a call stopped before any provisional response sends its CANCEL only once one comes (RFC 3261 section 9.1)', async () => {
    const s = await setup();
    const to = '+14155552101';
    const call = dial(s, to);
    const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
    call.stop.abort();
    // The INVITE is still being retransmitted (no provisional response yet): two more of them,
    // and no CANCEL meanwhile.
    await s.trunk.next('a retransmission', isRequest('INVITE'));
    await s.trunk.next('another retransmission', isRequest('INVITE'));
    assert.equal(s.trunk.inbox.filter(isRequest('CANCEL')).length, 0, 'no CANCEL before a provisional response');
    s.trunk.respond(invite, '180 Ringing');
    const cancel = (await s.trunk.next('the CANCEL', isRequest('CANCEL'))) as SipRequest;
    assert.equal(header(cancel, 'via'), header(invite, 'via'));
    s.trunk.respond(cancel, '200 OK');
    s.trunk.respond(invite, '487 Request Terminated');
    await s.trunk.next('the ACK of the 487', request('ACK', to));
    assert.equal((await call.result).status, 'no-answer');
  });

  it('a call stopped before any provisional response that then gets a final one never sends CANCEL', async () => {
    const s = await setup();
    const to = '+14155552102';
    const call = dial(s, to);
    const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
    call.stop.abort();
    await s.trunk.next('a retransmission', isRequest('INVITE'));
    s.trunk.respond(invite, '486 Busy Here');
    await s.trunk.next('the ACK of the 486', request('ACK', to));
    assert.notEqual((await call.result).status, 'answered');
    assert.equal(s.trunk.inbox.filter(isRequest('CANCEL')).length, 0, 'no CANCEL');
  });
});

describe('SIP as the caller: a 200 OK after Openline gave up', () => {
  /** The trunk answers `invite` with 200 OK (its Contact, SDP); Openline must ACK it and then hang up with BYE. */
  async function answeredTooLate(s: Setup, invite: SipRequest, to: string): Promise<void> {
    s.trunk.respond(invite, '200 OK', [`Contact: <sip:far@127.0.0.1:${s.trunk.port}>`], audioSdp(36990));
    const ack = (await s.trunk.next('the ACK of the 200', request('ACK', to))) as SipRequest;
    assert.equal(cseqOf(ack)?.seq, cseqOf(invite)?.seq);
    assert.match(header(ack, 'to') ?? '', /;tag=peer1/);
    assert.equal(ack.uri, `sip:far@127.0.0.1:${s.trunk.port}`);
    const bye = (await s.trunk.next('the BYE', request('BYE', to))) as SipRequest;
    assert.match(header(bye, 'to') ?? '', /;tag=peer1/);
    assert.equal(header(bye, 'call-id'), header(invite, 'call-id'));
    assert.equal(bye.uri, `sip:far@127.0.0.1:${s.trunk.port}`);
    assert.ok((cseqOf(bye)?.seq ?? 0) > (cseqOf(invite)?.seq ?? 0), 'the BYE has a CSeq of its own');
    s.trunk.respond(bye, '200 OK');
    // The 200 again (as if the ACK was lost): acknowledged again, and no second BYE.
    s.trunk.respond(invite, '200 OK', [`Contact: <sip:far@127.0.0.1:${s.trunk.port}>`], audioSdp(36990));
    await s.trunk.next('the ACK of the repeated 200', request('ACK', to));
    const byes = new Set(s.trunk.inbox.filter(request('BYE', to)).map((m) => header(m, 'via')));
    assert.equal(byes.size, 1, 'one BYE (and its retransmissions)');
  }

  it('a 200 OK crossing the CANCEL is acknowledged and ended with BYE; the call is not connected', async () => {
    const s = await setup();
    const to = '+14155552201';
    const call = dial(s, to);
    const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
    s.trunk.respond(invite, '180 Ringing');
    call.stop.abort();
    const cancel = (await s.trunk.next('the CANCEL', isRequest('CANCEL'))) as SipRequest;
    // The far end answered before it saw the CANCEL: the CANCEL is too late (200 to it all the same).
    s.trunk.respond(cancel, '200 OK');
    await answeredTooLate(s, invite, to);
    assert.equal((await call.result).status, 'no-answer');
  });

  it('a 200 OK that comes after the INVITE was given up for good is acknowledged and ended with BYE', async () => {
    // 64 T1 after the CANCEL is 1.28 s.
    const s = await setup({ t1Ms: 20 });
    const to = '+14155552202';
    const call = dial(s, to);
    const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
    s.trunk.respond(invite, '180 Ringing');
    call.stop.abort();
    await s.trunk.next('the CANCEL', isRequest('CANCEL'));
    // Neither the CANCEL nor the INVITE is answered: the call is over for Openline...
    assert.equal((await call.result).status, 'no-answer');
    // ... when the far end answers after all.
    await answeredTooLate(s, invite, to);
  });

  it('the 200 OK of a second branch of a forked INVITE is acknowledged and ended with BYE; the call stays up', async () => {
    const s = await setup();
    const to = '+14155552203';
    const call = dial(s, to);
    const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
    s.trunk.respond(invite, '200 OK', [`Contact: <sip:first@127.0.0.1:${s.trunk.port}>`], audioSdp(36992));
    assert.equal((await call.result).status, 'answered');
    await s.trunk.next('the ACK of the first 200', request('ACK', to));
    // A 200 from another branch: its own To tag and Contact.
    s.trunk.send(
      [
        'SIP/2.0 200 OK',
        ...(invite.headers.get('via') ?? []).map((v) => `Via: ${v}`),
        `From: ${header(invite, 'from')}`,
        `To: ${header(invite, 'to')};tag=branch2`,
        `Call-ID: ${header(invite, 'call-id')}`,
        `CSeq: ${header(invite, 'cseq')}`,
        `Contact: <sip:second@127.0.0.1:${s.trunk.port}>`,
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n'),
      s.endpoint.port,
    );
    const ack = await s.trunk.next('the ACK of the second 200', request('ACK', to));
    assert.match(header(ack, 'to') ?? '', /;tag=branch2/);
    const bye = (await s.trunk.next('the BYE', request('BYE', to))) as SipRequest;
    assert.equal(bye.uri, `sip:second@127.0.0.1:${s.trunk.port}`);
    assert.match(header(bye, 'to') ?? '', /;tag=branch2/);
    s.trunk.respond(bye, '200 OK');
  });
});

describe('SIP as the caller: redirects (3xx)', () => {
  it('a 302 is acknowledged and its Contact called with a new INVITE, in the same call', async () => {
    const s = await setup();
    const other = await udpPeer();
    try {
      const to = '+14155552301';
      const call = dial(s, to);
      const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
      s.trunk.respond(invite, '302 Moved Temporarily', [`Contact: <sip:+14155550177@127.0.0.1:${other.port}>`]);
      await s.trunk.next('the ACK of the 302', request('ACK', to));
      const moved = (await other.next('the INVITE to the Contact', forCall('+14155550177'))) as SipRequest;
      assert.equal(header(moved, 'call-id'), header(invite, 'call-id'));
      assert.equal(header(moved, 'from'), header(invite, 'from'));
      assert.ok((cseqOf(moved)?.seq ?? 0) > (cseqOf(invite)?.seq ?? 0));
      other.respond(moved, '486 Busy Here');
      assert.equal((await call.result).status, 'busy');
    } finally {
      other.close();
    }
  });

  it('a Contact at a private or metadata address is not followed; the next Contact (by q) is', async () => {
    const s = await setup();
    const other = await udpPeer();
    try {
      const to = '+14155552302';
      const call = dial(s, to);
      const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
      s.trunk.respond(invite, '302 Moved Temporarily', [
        `Contact: <sip:${to}@127.0.0.1:${other.port}>;q=0.5, <sip:${to}@169.254.169.254>;q=0.9`,
        'Contact: <sip:+14155550178@10.1.2.3:5060>;q=1.0',
      ]);
      const moved = (await other.next('the INVITE to the allowed Contact', forCall(to))) as SipRequest;
      other.respond(moved, '404 Not Found');
      const result = await call.result;
      assert.equal(result.status, 'failed');
      assert.match(result.status === 'failed' ? result.reason : '', /^SIP 404/);

      const refused = dial(s, '+14155552303');
      const second = (await s.trunk.next('the second INVITE', forCall('+14155552303'))) as SipRequest;
      s.trunk.respond(second, '302 Moved Temporarily', ['Contact: <sip:+14155550178@169.254.169.254>']);
      const outcome = await refused.result;
      assert.equal(outcome.status, 'failed');
      assert.match(outcome.status === 'failed' ? outcome.reason : '', /^SIP 302 .*redirect/i);
    } finally {
      other.close();
    }
  });

  it('a challenge from the trunk itself (no redirect) without credentials to answer it says the trunk wants them', async () => {
    const s = await setup();
    const to = '+14155552305';
    const call = dial(s, to);
    const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
    s.trunk.respond(invite, '401 Unauthorized', ['WWW-Authenticate: Digest realm="trunk", nonce="abc"']);
    const result = await call.result;
    assert.equal(result.status, 'failed');
    assert.match(result.status === 'failed' ? result.reason : '', /^SIP 401: the trunk wants credentials/);
  });

  it('redirects are followed a few hops at most', async () => {
    const s = await setup();
    const to = '+14155552304';
    const call = dial(s, to);
    // Every new INVITE (not its retransmissions) is sent on to another Contact.
    const seen = new Set<string>();
    let result: DialResult | undefined;
    void call.result.then((r) => (result = r));
    await until('the call to give up', () => {
      for (const m of s.trunk.inbox) {
        const via = header(m, 'via') ?? '';
        if (!isRequest('INVITE')(m) || seen.has(via)) continue;
        seen.add(via);
        s.trunk.respond(m, '302 Moved Temporarily', [`Contact: <sip:hop${seen.size}@127.0.0.1:${s.trunk.port}>`]);
      }
      return result !== undefined;
    });
    assert.equal(result?.status, 'failed');
    assert.match(result?.status === 'failed' ? result.reason : '', /^SIP 302 .*redirect/i);
    assert.ok(seen.size > 1 && seen.size <= 6, `${seen.size} INVITEs`);
  });
});

/** Places a call that the trunk answers at once with `extra` headers; resolves with the INVITE once acknowledged. */
async function answeredCall(s: Setup, to: string, extra: string[]): Promise<SipRequest> {
  const call = dial(s, to);
  const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
  s.trunk.respond(invite, '200 OK', [`Contact: <sip:far@127.0.0.1:${s.trunk.port}>`, ...extra], audioSdp(36994));
  assert.equal((await call.result).status, 'answered');
  await s.trunk.next('the ACK', request('ACK', to));
  return invite;
}

/** The next request in the dialog of the call `to` that is one of `methods`, not a retransmission of one seen already. */
async function nextOf(s: Setup, to: string, methods: string[], what: string, seen: Set<string>): Promise<SipRequest> {
  const found = (await s.trunk.next(
    what,
    (m) =>
      methods.some((method) => request(method, to)(m)) &&
      // In the dialog (a To tag): not a retransmission of the call's first INVITE.
      /;tag=/.test(header(m, 'to') ?? '') &&
      !seen.has(header(m, 'via') ?? ''),
  )) as SipRequest;
  seen.add(header(found, 'via') ?? '');
  return found;
}

describe('SIP as the caller: glare (491 Request Pending)', () => {
  for (const method of ['UPDATE', 'INVITE']) {
    it(`a session refresh (${method}) answered 491 is sent again after RFC 3261's random wait, not given up`, async () => {
      const s = await setup();
      const to = method === 'UPDATE' ? '+14155552401' : '+14155552402';
      // Openline refreshes (refresher=uac) every second; UPDATE when the far end allows it.
      const allow = method === 'UPDATE' ? 'INVITE, ACK, BYE, CANCEL, UPDATE' : 'INVITE, ACK, BYE, CANCEL';
      await answeredCall(s, to, ['Session-Expires: 2;refresher=uac', 'Require: timer', `Allow: ${allow}`]);
      const seen = new Set<string>();
      const first = await nextOf(s, to, [method], 'the refresh', seen);
      s.trunk.respond(first, '491 Request Pending');
      // Glare: the far end sent a request of its own at the same time. Openline tries again later
      // (it made the Call-ID: after 2.1 to 4 seconds); giving up would end the call (BYE).
      const again = await nextOf(s, to, [method, 'BYE'], 'the refresh again', seen);
      assert.equal(again.method, method, 'the refresh is sent again, the call not ended');
      assert.ok((cseqOf(again)?.seq ?? 0) > (cseqOf(first)?.seq ?? 0));
      assert.match(header(again, 'session-expires') ?? '', /^2;refresher=uac/);
      // Answered this time, with a long interval: the call goes on.
      s.trunk.respond(
        again,
        '200 OK',
        ['Session-Expires: 3600;refresher=uac'],
        method === 'INVITE' ? audioSdp(36994) : '',
      );
      if (method === 'INVITE') await s.trunk.next('the ACK of the re-INVITE', request('ACK', to));
    });
  }
});

describe('SIP as the caller: 422 Session Interval Too Small (RFC 4028)', () => {
  it("an INVITE answered 422 is sent again with Session-Expires and Min-SE raised to the far end's Min-SE", async () => {
    const s = await setup();
    const to = '+14155552501';
    const call = dial(s, to);
    const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
    assert.equal(header(invite, 'session-expires'), '1800');
    s.trunk.respond(invite, '422 Session Interval Too Small', ['Min-SE: 3600']);
    await s.trunk.next('the ACK of the 422', request('ACK', to));
    const again = (await s.trunk.next(
      'the INVITE again',
      (m) => forCall(to)(m) && isRequest('INVITE')(m) && header(m, 'via') !== header(invite, 'via'),
    )) as SipRequest;
    assert.ok((cseqOf(again)?.seq ?? 0) > (cseqOf(invite)?.seq ?? 0));
    assert.equal(header(again, 'session-expires'), '3600');
    assert.equal(header(again, 'min-se'), '3600');
    s.trunk.respond(again, '486 Busy Here');
    assert.equal((await call.result).status, 'busy');
  });

  it("a session refresh answered 422 is sent again with the interval raised to the far end's Min-SE", async () => {
    const s = await setup();
    const to = '+14155552502';
    await answeredCall(s, to, [
      'Session-Expires: 2;refresher=uac',
      'Require: timer',
      'Allow: INVITE, ACK, BYE, UPDATE',
    ]);
    const seen = new Set<string>();
    const first = await nextOf(s, to, ['UPDATE'], 'the refresh', seen);
    s.trunk.respond(first, '422 Session Interval Too Small', ['Min-SE: 120']);
    const again = await nextOf(s, to, ['UPDATE', 'BYE'], 'the refresh again', seen);
    assert.equal(again.method, 'UPDATE', 'the refresh is sent again, the call not ended');
    assert.match(header(again, 'session-expires') ?? '', /^120;refresher=uac/);
    assert.equal(header(again, 'min-se'), '120');
    s.trunk.respond(again, '200 OK', ['Session-Expires: 3600;refresher=uac']);
  });
});

describe('SIP as the caller: reliable provisional responses (RFC 3262)', () => {
  it('a 183 that requires 100rel gets a PRACK with its RAck, once; the call goes on with the next CSeq', async () => {
    const s = await setup();
    const to = '+14155552601';
    const call = dial(s, to);
    const invite = (await s.trunk.next('the INVITE', forCall(to))) as SipRequest;
    assert.match((invite.headers.get('supported') ?? []).join(','), /(^|[\s,])100rel([\s,]|$)/);
    const seq = cseqOf(invite)?.seq ?? 0;
    const contact = `Contact: <sip:far@127.0.0.1:${s.trunk.port}>`;
    const reliable = ['Require: 100rel', 'RSeq: 7', contact];
    s.trunk.respond(invite, '183 Session Progress', reliable, audioSdp(36996));
    const prack = (await s.trunk.next('the PRACK', request('PRACK', to))) as SipRequest;
    assert.equal(prack.uri, `sip:far@127.0.0.1:${s.trunk.port}`);
    assert.equal(header(prack, 'rack'), `7 ${seq} INVITE`);
    assert.equal(header(prack, 'call-id'), header(invite, 'call-id'));
    assert.match(header(prack, 'to') ?? '', /;tag=peer1/);
    assert.ok((cseqOf(prack)?.seq ?? 0) > seq, 'the PRACK has a CSeq of its own');
    s.trunk.respond(prack, '200 OK');
    // The 183 again (a retransmission): no second PRACK. Then the answer.
    s.trunk.respond(invite, '183 Session Progress', reliable, audioSdp(36996));
    s.trunk.respond(invite, '200 OK', [contact], audioSdp(36996));
    assert.equal((await call.result).status, 'answered');
    const ack = await s.trunk.next('the ACK', request('ACK', to));
    assert.equal(cseqOf(ack)?.seq, seq);
    const pracks = new Set(s.trunk.inbox.filter(request('PRACK', to)).map((m) => header(m, 'via')));
    assert.equal(pracks.size, 1, 'one PRACK (and its retransmissions)');
    // Hung up: the BYE's CSeq comes after the PRACK's.
    void s.hangups[0]?.();
    const bye = await s.trunk.next('the BYE', request('BYE', to));
    assert.ok((cseqOf(bye)?.seq ?? 0) > (cseqOf(prack)?.seq ?? 0));
    s.trunk.respond(bye as SipRequest, '200 OK');
  });
});
