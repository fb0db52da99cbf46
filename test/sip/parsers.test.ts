import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { parseMessage, parseUri, param, serialize, uriOf, type SipRequest } from '../../src/carriers/sip/message.js';
import { answerChallenge, digestAuthorization, parseChallenge } from '../../src/carriers/sip/digest.js';
import { parseRtp, writeRtp } from '../../src/carriers/sip/rtp.js';
import { answer, offer, remoteMedia } from '../../src/carriers/sip/sdp.js';
import { parseTrunk, type SipTrunk } from '../../src/domain/sip-trunk.js';
import { SipStreamReader } from '../../src/carriers/sip/stream.js';
import { answerSessionTimer, expiryMs, parseSessionExpires } from '../../src/carriers/sip/timers.js';
import { alawToLinear, linearToAlaw, mulawToAlaw, alawToMulaw, seededRandom } from '../../src/media/audio.js';

const INVITE = [
  'INVITE sip:+14155550100@pbx.example.com SIP/2.0',
  'Via: SIP/2.0/UDP 10.0.0.5:5060;branch=z9hG4bK776asdhds;rport, SIP/2.0/UDP 10.0.0.9;branch=z9hG4bKx',
  'Max-Forwards: 70',
  'f: "Ann, Smith" <sip:+14155550111@pbx.example.com>;tag=1928301774',
  't: <sip:+14155550100@pbx.example.com>',
  'i: a84b4c76e66710@pc33.example.com',
  'CSeq: 314159 INVITE',
  'Contact: <sip:ann@10.0.0.5:5060;transport=udp>',
  'Subject: a folded',
  '  header value',
  'Content-Type: application/sdp',
  'Content-Length: 4',
  '',
  'v=0\r\nextra bytes beyond the length',
].join('\r\n');

test('SIP messages: compact headers, lists, folding, Content-Length, round trip', () => {
  const message = parseMessage(INVITE) as SipRequest;
  assert.equal(message.kind, 'request');
  assert.equal(message.method, 'INVITE');
  assert.deepEqual(message.headers.get('via')?.length, 2);
  assert.equal(param(message.headers.get('via')![0], 'branch'), 'z9hG4bK776asdhds');
  assert.equal(param(message.headers.get('from')![0], 'tag'), '1928301774');
  assert.equal(uriOf(message.headers.get('from')![0]), 'sip:+14155550111@pbx.example.com');
  assert.equal(message.headers.get('call-id')![0], 'a84b4c76e66710@pc33.example.com');
  assert.equal(message.headers.get('subject')![0], 'a folded header value');
  assert.equal(message.body, 'v=0\r');
  const again = parseMessage(serialize(message)) as SipRequest;
  assert.equal(again.uri, message.uri);
  assert.deepEqual(again.headers.get('via'), message.headers.get('via'));
  assert.deepEqual(parseUri('sip:+14155550100@pbx.example.com:5080;user=phone'), {
    user: '+14155550100',
    host: 'pbx.example.com',
    port: 5080,
    params: { user: 'phone' },
  });
});

test('SIP messages: random and mutated input never throws', () => {
  const random = seededRandom(7);
  const base = Buffer.from(INVITE);
  for (let i = 0; i < 20_000; i++) {
    let data: Buffer;
    if (i % 2 === 0) {
      data = Buffer.from(base);
      for (let k = 0; k < 1 + Math.floor(random() * 8); k++)
        data[Math.floor(random() * data.length)] = Math.floor(random() * 256);
      if (random() < 0.3) data = data.subarray(0, Math.floor(random() * data.length));
    } else {
      data = Buffer.from(Array.from({ length: Math.floor(random() * 300) }, () => Math.floor(random() * 256)));
    }
    assert.doesNotThrow(() => parseMessage(data));
    assert.doesNotThrow(() => parseRtp(data));
    assert.doesNotThrow(() => remoteMedia(data.toString('latin1')));
    assert.doesNotThrow(() => parseChallenge(data.toString('latin1')));
  }
  assert.equal(parseMessage(Buffer.alloc(70_000, 65)), undefined, 'oversized');
  assert.equal(parseMessage('INVITE sip:a@b SIP/2.0\r\nVia: x\r\n\r\n'), undefined, 'required headers missing');
});

test('digest: the response of RFC 2617 section 3.5 (qop=auth), and MD5 without qop', () => {
  const challenge = parseChallenge(
    'Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41"',
  )!;
  assert.equal(challenge.qop, 'auth');
  const value = digestAuthorization(
    challenge,
    { username: 'Mufasa', password: 'Circle Of Life' },
    { method: 'GET', uri: '/dir/index.html' },
  );
  const fields = Object.fromEntries([...value.matchAll(/(\w+)="?([^",]+)"?/g)].map((m) => [m[1], m[2]]));
  const md5 = (s: string) => createHash('md5').update(s).digest('hex');
  const ha1 = md5('Mufasa:testrealm@host.com:Circle Of Life');
  const ha2 = md5('GET:/dir/index.html');
  assert.equal(fields.response, md5(`${ha1}:${challenge.nonce}:${fields.nc}:${fields.cnonce}:auth:${ha2}`));
  assert.equal(fields.opaque, '5ccc069c403ebaf9f0171e9517f40e41');
  const plain = parseChallenge('Digest realm="sip.example.com", nonce="abc"')!;
  const noQop = digestAuthorization(plain, { username: 'u', password: 'p' }, { method: 'INVITE', uri: 'sip:1@x' });
  assert.match(noQop, new RegExp(`response="${md5(`${md5('u:sip.example.com:p')}:abc:${md5('INVITE:sip:1@x')}`)}"`));
  assert.equal(parseChallenge('Basic realm="x"'), undefined);
  // Challenges in the order of RFC 8760's preference: the first Openline can answer (SHA-256) is answered.
  const several = answerChallenge(
    {
      status: 401,
      headers: new Map([
        [
          'www-authenticate',
          [
            'Digest realm="sip.example.com", nonce="n1", algorithm=SHA-512-256, qop="auth"',
            'Digest realm="sip.example.com", nonce="n1", algorithm=SHA-256, qop="auth"',
            'Digest realm="sip.example.com", nonce="n1", algorithm=MD5, qop="auth"',
          ],
        ],
      ]),
    },
    { username: 'u', password: 'p' },
    { method: 'INVITE', uri: 'sip:1@x' },
  );
  assert.match(several?.value ?? '', /algorithm=SHA-256/);
});

test('SDP: our offer, the far end choosing PCMA, the answer naming one codec and telephone-event', () => {
  const ours = offer({ address: '192.0.2.10', port: 30000, sessionId: 42 });
  assert.match(ours, /m=audio 30000 RTP\/AVP 0 8 101/);
  assert.match(ours, /a=rtpmap:101 telephone-event\/8000/);
  const theirs = remoteMedia(
    'v=0\r\no=- 1 1 IN IP4 198.51.100.7\r\ns=-\r\nc=IN IP4 198.51.100.7\r\nt=0 0\r\nm=audio 4000 RTP/AVP 18 8 96\r\na=rtpmap:18 G729/8000\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:96 telephone-event/8000\r\na=sendrecv\r\n',
  )!;
  assert.deepEqual(theirs.codec, { name: 'PCMA', payloadType: 8, dtmfPayloadType: 96 });
  assert.equal(theirs.address, '198.51.100.7');
  assert.equal(theirs.port, 4000);
  assert.match(answer({ address: '192.0.2.10', port: 30002, sessionId: 1 }, theirs), /m=audio 30002 RTP\/AVP 8 96/);
  assert.equal(
    remoteMedia('v=0\r\nm=audio 4000 RTP/AVP 18\r\nc=IN IP4 1.2.3.4\r\na=rtpmap:18 G729/8000\r\n'),
    undefined,
  ); // Beside Opus, telephone-events at 48 kHz come first: those at G.711's 8 kHz are the ones taken.
  const withOpus = remoteMedia(
    'v=0\r\no=- 1 2 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=audio 20000 RTP/AVP 102 0 8 100 101\r\na=rtpmap:102 opus/48000/2\r\na=rtpmap:100 telephone-event/48000\r\na=fmtp:100 0-16\r\na=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-16\r\n',
  )!;
  assert.deepEqual(withOpus.codec, { name: 'PCMU', payloadType: 0, dtmfPayloadType: 101 });
  assert.match(
    answer({ address: '192.0.2.10', port: 30002, sessionId: 1 }, withOpus),
    /m=audio 30002 RTP\/AVP 0 101\r\n/,
  );
  // RTP/SAVP is taken with a key Openline can use (the first such audio stream is the one
  // answered), not without one: then a plain RTP/AVP stream beside it is the one taken.
  const srtp = (crypto: string) =>
    [
      'v=0',
      'o=- 1 2 IN IP4 10.0.0.1',
      's=-',
      'c=IN IP4 10.0.0.1',
      't=0 0',
      'm=audio 20000 RTP/SAVP 0',
      crypto,
      '',
    ].join('\r\n');
  const keyed = srtp('a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz');
  assert.equal(remoteMedia(keyed)?.port, 20000);
  const unusable = srtp('a=crypto:1 AES_256_CM_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz');
  assert.equal(remoteMedia(unusable), undefined);
  const either = remoteMedia(`${unusable}m=audio 20002 RTP/AVP 0\r\n`)!;
  assert.equal(either.port, 20002);
  assert.equal(either.crypto, undefined);
  assert.match(
    answer({ address: '192.0.2.10', port: 30002, sessionId: 1 }, either),
    /m=audio 0 RTP\/SAVP 0\r\n[\s\S]*m=audio 30002 RTP\/AVP 0\r\n/,
  );
});

test('RTP packets round trip; RTCP and junk are not audio', () => {
  const packet = {
    payloadType: 0,
    marker: true,
    sequence: 65535,
    timestamp: 2 ** 32 - 1,
    ssrc: 1234,
    payload: Buffer.alloc(160, 0xff),
  };
  assert.deepEqual(parseRtp(writeRtp(packet)), packet);
  const rtcp = Buffer.alloc(28);
  rtcp[0] = 0x80;
  rtcp[1] = 200;
  assert.equal(parseRtp(rtcp), undefined);
});

test('G.711 A-law: the standard code points, and mu-law to A-law and back keeps the signal', () => {
  assert.equal(linearToAlaw(0), 0xd5);
  assert.equal(alawToLinear(0xd5), 8);
  assert.equal(linearToAlaw(32767), 0xaa);
  for (let x = -32000; x <= 32000; x += 97) {
    const y = alawToLinear(linearToAlaw(x));
    assert.ok(Math.abs(y - x) <= Math.max(16, Math.abs(x) / 16), `${x} -> ${y}`);
  }
  const mulaw = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  const back = alawToMulaw(mulawToAlaw(mulaw));
  let close = 0;
  for (let i = 0; i < 256; i++) if (Math.abs(back[i]! - mulaw[i]!) <= 1 || (back[i]! ^ mulaw[i]!) <= 1) close++;
  assert.ok(close > 200);
});

test('OPENLINE_SIP_TRUNK values', () => {
  assert.deepEqual(parseTrunk('sip:alice:s%40cret@sip.example.com:5080;transport=udp'), {
    host: 'sip.example.com',
    port: 5080,
    transport: 'udp',
    username: 'alice',
    password: 's@cret',
  });
  assert.deepEqual(parseTrunk('sip:pbx.local'), { host: 'pbx.local', port: 5060, transport: 'udp' });
  assert.deepEqual(parseTrunk('sip:pbx.local;transport=TCP'), { host: 'pbx.local', port: 5060, transport: 'tcp' });
  assert.deepEqual(parseTrunk('sips:pbx.local'), { host: 'pbx.local', port: 5061, transport: 'tls' });
  assert.deepEqual(parseTrunk('sip:alice:pw@sip.example.com;transport=tls;register=true'), {
    host: 'sip.example.com',
    port: 5061,
    transport: 'tls',
    username: 'alice',
    password: 'pw',
    register: true,
  });
  assert.match(String(parseTrunk('sip:pbx.local;transport=sctp')), /not supported: use transport=udp, tcp or tls/);
  assert.match(String(parseTrunk('sips:pbx.local;transport=tcp')), /TLS/);
  assert.match(String(parseTrunk('sip:pbx.local;register=true')), /needs the user/);
  assert.match(String(parseTrunk('sip:u@pbx.local;register=yes')), /true or false/);
  // srtp=mandatory or optional: the trunk's calls offer SRTP.
  assert.equal((parseTrunk('sips:pbx.local;srtp=mandatory') as SipTrunk).srtp, 'mandatory');
  assert.equal((parseTrunk('sip:pbx.local;srtp=Optional') as SipTrunk).srtp, 'optional');
  assert.match(String(parseTrunk('sip:pbx.local;srtp=yes')), /mandatory or optional/);
  assert.match(String(parseTrunk('http://example.com')), /SIP URI/);
});

test('SIP over a stream: framing by Content-Length across chunks, keep-alive pings, malformed streams', () => {
  const options = (branch: string, body = '') =>
    `OPTIONS sip:x@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:1;branch=${branch}\r\nl: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const reader = new SipStreamReader();
  const stream = Buffer.from(`\r\n\r\n${options('a', 'hello')}\r\n${options('b')}${options('c', 'x')}`);
  const messages: string[] = [];
  let pings = 0;
  // Byte by byte: every split point of the stream.
  for (let i = 0; i < stream.length; i++) {
    const read = reader.push(stream.subarray(i, i + 1));
    assert.notEqual(read, 'malformed');
    if (read === 'malformed') return;
    pings += read.pings;
    messages.push(...read.messages.map((m) => m.toString()));
  }
  assert.equal(pings, 1);
  assert.deepEqual(messages, [options('a', 'hello'), options('b'), options('c', 'x')]);
  assert.equal(new SipStreamReader().push(Buffer.from('INVITE sip:x SIP/2.0\r\nVia: x\r\n\r\n')), 'malformed');
  assert.equal(new SipStreamReader(1000).push(Buffer.from(options('d', 'y'.repeat(2000)))), 'malformed');
  assert.equal(new SipStreamReader(1000).push(Buffer.alloc(1500, 65)), 'malformed', 'a header that never ends');
  // Random bytes never throw.
  const random = seededRandom(11);
  for (let i = 0; i < 2000; i++) {
    const r = new SipStreamReader();
    const chunk = Buffer.from(Array.from({ length: Math.floor(random() * 400) }, () => Math.floor(random() * 256)));
    assert.doesNotThrow(() => r.push(chunk));
  }
});

test('Session-Expires: reading it, and answering it (422 below Min-SE, refresher chosen)', () => {
  assert.deepEqual(parseSessionExpires('1800;refresher=uac'), { interval: 1800, refresher: 'uac' });
  assert.deepEqual(parseSessionExpires(' 90 '), { interval: 90, refresher: undefined });
  assert.equal(parseSessionExpires('soon'), undefined);
  assert.equal(expiryMs(1800), (1800 - 32) * 1000);
  assert.equal(expiryMs(90), 60_000);
  const invite = (lines: string[]) =>
    parseMessage(
      [
        'INVITE sip:+14155550100@127.0.0.1 SIP/2.0',
        'Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bKse',
        'From: <sip:a@127.0.0.1>;tag=1',
        'To: <sip:+14155550100@127.0.0.1>',
        'Call-ID: se',
        'CSeq: 1 INVITE',
        ...lines,
        '',
        '',
      ].join('\r\n'),
    ) as SipRequest;
  assert.deepEqual(answerSessionTimer(invite([])), { tooBrief: false, headers: [], value: undefined });
  assert.deepEqual(answerSessionTimer(invite(['x: 60'])), { tooBrief: true });
  assert.deepEqual(answerSessionTimer(invite(['Supported: timer', 'Session-Expires: 600'])), {
    tooBrief: false,
    headers: [
      ['session-expires', ['600;refresher=uac']],
      ['require', ['timer']],
    ],
    value: '600;refresher=uac',
  });
  assert.deepEqual(answerSessionTimer(invite(['Session-Expires: 600'])), {
    tooBrief: false,
    headers: [['session-expires', ['600;refresher=uas']]],
    value: '600;refresher=uas',
  });
  // refresher=uac (a proxy's) from a caller that does not support timers: it could not refresh,
  // nor take Require: timer (RFC 4028 section 9): Openline refreshes.
  assert.deepEqual(answerSessionTimer(invite(['Session-Expires: 600;refresher=uac'])), {
    tooBrief: false,
    headers: [['session-expires', ['600;refresher=uas']]],
    value: '600;refresher=uas',
  });
});
