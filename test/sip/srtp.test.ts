import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import dgram from 'node:dgram';
import { AesCm, SrtpContext, SrtpKey, deriveSessionKeys } from '../../src/carriers/sip/srtp.js';
import { SdesSession, answer, offer, remoteMedia } from '../../src/carriers/sip/sdp.js';
import { RtpSession, writeRtp } from '../../src/carriers/sip/rtp.js';
import { freeUdpPort } from '../../src/testing/ports.js';
import { waitFor } from '../../src/testing/wait.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

/** The master key and salt of RFC 3711 appendix B.3 (and of libsrtp's reference packet). */
const MASTER = hex('E1F97A0D3E018BE0D64FA32C06DE4139 0EC675AD498AFEEBB6960B3AABE6');

test('session keys derive as RFC 3711 appendix B.3 lists them', () => {
  const keys = deriveSessionKeys(MASTER.subarray(0, 16), MASTER.subarray(16));
  assert.equal(keys.cipherKey.toString('hex'), 'c61e7a93744f39ee10734afe3ff7a087');
  assert.equal(keys.cipherSalt.toString('hex'), '30cbbc08863d8c85d49db34a9ae1');
  assert.equal(keys.authKey.toString('hex'), 'cebe321f6ff7716b6fd4ab49af256a156d38baa4');
});

test('the AES counter-mode keystream is that of RFC 3711 appendix B.2', () => {
  const stream = Buffer.alloc(0xff02 * 16);
  new AesCm(hex('2B7E151628AED2A6ABF7158809CF4F3C'), hex('F0F1F2F3F4F5F6F7F8F9FAFBFCFD')).apply(
    0,
    0,
    stream,
    stream,
    0,
  );
  const block = (n: number) => stream.subarray(n * 16, n * 16 + 16).toString('hex');
  assert.equal(block(0), 'e03ead0935c95e80e166b16dd92b4eb4');
  assert.equal(block(1), 'd23513162b02d0f72a43a2fe4a5f97ab');
  assert.equal(block(2), '41e95b3bb0a2e8dd477901e4fca894c0');
  assert.equal(block(0xfeff), 'ec8cdf7398607cb0f2d21675ea9ea1e4');
  assert.equal(block(0xff00), '362b7c3c6773516318a077d7fc5073ae');
  assert.equal(block(0xff01), '6a2cc3787889374fbeb4c81b17ba6c44');
});

const PLAIN = hex('800f1234decafbadcafebabe' + 'ab'.repeat(16));
/** libsrtp's reference packet (srtp_driver.c, srtp_validate) under AES_CM_128_HMAC_SHA1_80. */
const PROTECTED = hex('800f1234decafbadcafebabe 4e55dc4ce79978d88ca4d215949d2402 b78d6acc99ea179b8dbb');

test('an RTP packet is protected into the reference SRTP packet, and back', () => {
  const key = new SrtpKey('AES_CM_128_HMAC_SHA1_80', MASTER);
  assert.deepEqual(new SrtpContext(key).protect(PLAIN), PROTECTED);
  assert.deepEqual(new SrtpContext(key).unprotect(PROTECTED), PLAIN);
});

test('the 32-bit tag suite authenticates with the first 4 bytes of the same HMAC', () => {
  const key = new SrtpKey('AES_CM_128_HMAC_SHA1_32', MASTER);
  const packet = new SrtpContext(key).protect(PLAIN);
  assert.deepEqual(packet, PROTECTED.subarray(0, PLAIN.length + 4));
  assert.deepEqual(new SrtpContext(key).unprotect(packet), PLAIN);
});

const rtp = (seq: number, ssrc = 0x11223344, payload = Buffer.alloc(160, seq & 0xff)) => {
  const header = Buffer.alloc(12);
  header[0] = 0x80;
  header.writeUInt16BE(seq & 0xffff, 2);
  header.writeUInt32BE((seq * 160) >>> 0, 4);
  header.writeUInt32BE(ssrc, 8);
  return Buffer.concat([header, payload]);
};

test('a packet altered, replayed, under another key or MKI, or too short is dropped', () => {
  const key = SrtpKey.random('AES_CM_128_HMAC_SHA1_80');
  const sender = new SrtpContext(key);
  const receiver = new SrtpContext(key);
  const first = sender.protect(rtp(1000));
  const altered = Buffer.from(first);
  altered[20]! ^= 1;
  assert.equal(receiver.unprotect(altered), undefined);
  assert.deepEqual(receiver.unprotect(first), rtp(1000));
  assert.equal(receiver.unprotect(first), undefined, 'a replay is dropped');
  const second = sender.protect(rtp(1001));
  assert.equal(new SrtpContext(SrtpKey.random('AES_CM_128_HMAC_SHA1_80')).unprotect(second), undefined);
  assert.equal(receiver.unprotect(second.subarray(0, 15)), undefined);
  assert.deepEqual(receiver.unprotect(second), rtp(1001));
  const withMki = new SrtpKey(key.suite, Buffer.concat([key.masterKey, key.masterSalt]), hex('00000001'));
  const mkiPacket = new SrtpContext(withMki).protect(rtp(7));
  assert.equal(mkiPacket.length, rtp(7).length + 4 + 10);
  assert.deepEqual(new SrtpContext(withMki).unprotect(mkiPacket), rtp(7));
  const otherMki = new SrtpKey(key.suite, Buffer.concat([key.masterKey, key.masterSalt]), hex('00000002'));
  assert.equal(new SrtpContext(otherMki).unprotect(mkiPacket), undefined);
});

test('the rollover counter follows the sequence number across its wrap, late packets of either side included', () => {
  const key = SrtpKey.random('AES_CM_128_HMAC_SHA1_80');
  const sender = new SrtpContext(key);
  const receiver = new SrtpContext(key);
  // 65534, 65535, 0 (a new rollover), then 65533 late (the old one), then 1, 2.
  const sent = new Map([65534, 65535, 65536, 65533, 65537, 65538].map((n) => [n, sender.protect(rtp(n))]));
  for (const n of [65534, 65535, 65536, 65533, 65537, 65538])
    assert.deepEqual(receiver.unprotect(sent.get(n)!), rtp(n), `packet ${n}`);
  // The same sequence number one rollover later is another packet (another keystream), not a replay.
  for (let n = 65539; n < 65534 + 65536; n += 1000) receiver.unprotect(sender.protect(rtp(n)));
  const later = sender.protect(rtp(65534 + 65536));
  assert.deepEqual(receiver.unprotect(later), rtp(65534 + 65536));
  assert.notDeepEqual(later.subarray(12), sent.get(65534)!.subarray(12));
});

test('a key shows neither its bytes nor its base64 in JSON, inspect or a string', () => {
  const key = SrtpKey.random('AES_CM_128_HMAC_SHA1_80');
  const shown = [JSON.stringify({ key }), inspect({ key }), String(key), `${key}`].join(' ');
  assert.doesNotMatch(shown, new RegExp(key.inline.slice(0, 12).replace(/[+/]/g, '\\$&')));
  assert.doesNotMatch(shown, new RegExp(key.masterKey.toString('hex')));
  assert.match(shown, /AES_CM_128_HMAC_SHA1_80/);
});

const LOCAL = { address: '192.0.2.10', port: 30000, sessionId: 7 };
const sdpOf = (protocol: string, lines: string[]) =>
  ['v=0', 'o=- 1 1 IN IP4 198.51.100.7', 's=-', 'c=IN IP4 198.51.100.7', 't=0 0', `m=audio 4000 ${protocol} 0`]
    .concat(lines, [''])
    .join('\r\n');
const line = (tag: number, suite: string, key: SrtpKey, extra = '') =>
  `a=crypto:${tag} ${suite} inline:${key.inline}${extra}`;

test('an SRTP offer: the first a=crypto line Openline can use is taken, with its lifetime and MKI', () => {
  const key = SrtpKey.random('AES_CM_128_HMAC_SHA1_32');
  const media = remoteMedia(
    sdpOf('RTP/SAVP', [
      line(1, 'AES_256_CM_HMAC_SHA1_80', key),
      line(2, 'AES_CM_128_HMAC_SHA1_80', key, ' UNENCRYPTED_SRTP'),
      line(3, 'AES_CM_128_HMAC_SHA1_32', key, '|2^31|258:2'),
      line(4, 'AES_CM_128_HMAC_SHA1_80', key),
    ]),
  )!;
  assert.equal(media.crypto?.tag, 3);
  assert.equal(media.crypto?.key.suite, 'AES_CM_128_HMAC_SHA1_32');
  assert.equal(media.crypto?.key.mki?.toString('hex'), '0102');
  assert.ok(media.crypto?.key.equals(new SrtpKey(key.suite, Buffer.from(key.inline, 'base64'), hex('0102'))));
  // Best-effort SRTP: keys in a plain RTP/AVP offer are taken too, and the answer stays RTP/AVP.
  const avp = remoteMedia(sdpOf('RTP/AVP', [line(1, 'AES_CM_128_HMAC_SHA1_80', key)]))!;
  assert.equal(avp.crypto?.tag, 1);
  const sdes = new SdesSession();
  const keyed = sdes.answer(avp);
  assert.ok(keyed !== 'refused' && keyed.crypto);
  assert.match(
    answer(LOCAL, avp, keyed.crypto),
    /m=audio 30000 RTP\/AVP 0\r\n[\s\S]*a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:/,
  );
});

test("Openline's answer to an SRTP offer: RTP/SAVP, the offer's tag and suite, a key of its own", () => {
  const theirs = SrtpKey.random('AES_CM_128_HMAC_SHA1_80');
  const media = remoteMedia(sdpOf('RTP/SAVP', [line(5, 'AES_CM_128_HMAC_SHA1_80', theirs)]))!;
  const sdes = new SdesSession();
  const keyed = sdes.answer(media);
  assert.ok(keyed !== 'refused' && keyed.crypto && keyed.keys);
  assert.ok(keyed.keys.receive.equals(theirs));
  assert.ok(keyed.keys.send.equals(keyed.crypto.key));
  assert.notEqual(keyed.crypto.key.inline, theirs.inline);
  const sdp = answer(LOCAL, media, keyed.crypto);
  assert.match(sdp, /m=audio 30000 RTP\/SAVP 0\r\n/);
  assert.match(
    sdp,
    new RegExp(`a=crypto:5 AES_CM_128_HMAC_SHA1_80 inline:${keyed.crypto.key.inline.replace(/[+/]/g, '\\$&')}\r\n`),
  );
  // The same offer again (a session refresh) is answered with the same key: the SDP does not change.
  const again = sdes.answer(media);
  assert.ok(again !== 'refused' && again.crypto?.key.equals(keyed.crypto.key));
  // Once SRTP, an offer in the clear is refused (488), not heard unencrypted.
  assert.equal(sdes.answer(remoteMedia(sdpOf('RTP/AVP', []))!), 'refused');
});

test('offers of srtp=mandatory and srtp=optional, and what their answers settle', () => {
  const mandatory = new SdesSession('mandatory');
  const ours = offer(LOCAL, mandatory.offer());
  assert.match(ours, /m=audio 30000 RTP\/SAVP 0 8 101\r\n/);
  assert.match(
    ours,
    /a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\S{40}\r\na=crypto:2 AES_CM_128_HMAC_SHA1_32 inline:\S{40}\r\n/,
  );
  const offered = remoteMedia(ours)!;
  // The far end is another SDES session answering: each side's send key is the other's receive key.
  const far = new SdesSession();
  const farKeyed = far.answer(offered);
  assert.ok(farKeyed !== 'refused' && farKeyed.keys && farKeyed.crypto);
  const settled = mandatory.answered(remoteMedia(answer(LOCAL, offered, farKeyed.crypto))!);
  assert.ok(settled !== 'refused' && settled.keys);
  assert.ok(settled.keys.send.equals(farKeyed.keys.receive));
  assert.ok(settled.keys.receive.equals(farKeyed.keys.send));
  // A later offer of ours repeats what was settled, alone.
  assert.equal(mandatory.offer()?.crypto.length, 1);
  // An answer without a key, or with one on a line never offered, is refused.
  const plainAnswer = remoteMedia(sdpOf('RTP/AVP', []))!;
  const unanswered = new SdesSession('mandatory');
  unanswered.offer();
  assert.equal(unanswered.answered(plainAnswer), 'refused');
  const stranger = new SdesSession('mandatory');
  stranger.offer();
  assert.equal(
    stranger.answered(
      remoteMedia(sdpOf('RTP/SAVP', [line(9, 'AES_CM_128_HMAC_SHA1_80', SrtpKey.random('AES_CM_128_HMAC_SHA1_80'))]))!,
    ),
    'refused',
  );
  // optional: RTP/AVP with the keys; an answer without a key is plain RTP.
  const optional = new SdesSession('optional');
  assert.match(offer(LOCAL, optional.offer()), /m=audio 30000 RTP\/AVP 0 8 101\r\n[\s\S]*a=crypto:1 /);
  assert.deepEqual(optional.answered(plainAnswer), {});
  assert.equal(optional.offer(), undefined, 'plain RTP from then on');
  // No mode: our offers are plain, as before.
  assert.doesNotMatch(offer(LOCAL, new SdesSession().offer()), /crypto|SAVP/);
});

test('RTP sessions keyed by SDES talk SRTP: the far end hears the audio, and plain or forged packets are not heard', async () => {
  const [portA, portB] = [await freeUdpPort(), await freeUdpPort()];
  const a = await RtpSession.open('127.0.0.1', { min: portA, max: portA });
  const b = await RtpSession.open('127.0.0.1', { min: portB, max: portB });
  const sniffer = dgram.createSocket('udp4');
  try {
    const keyA = SrtpKey.random('AES_CM_128_HMAC_SHA1_80');
    const keyB = SrtpKey.random('AES_CM_128_HMAC_SHA1_80');
    const pcmu = { name: 'PCMU', payloadType: 0 } as const;
    a.connect({ address: '127.0.0.1', port: portB }, pcmu, { srtp: { send: keyA, receive: keyB } });
    b.connect({ address: '127.0.0.1', port: portA }, pcmu, { srtp: { send: keyB, receive: keyA } });
    const heardByB: Buffer[] = [];
    b.on((event) => {
      if (event.type === 'media' && event.payload.some((x) => x !== 0xff)) heardByB.push(event.payload);
    });
    a.sendMedia(Buffer.alloc(160, 0x2a));
    await waitFor('B hears A', () => heardByB.length > 0, 2000);
    assert.ok(heardByB[0]!.every((x) => x === 0x2a));
    // Plain RTP, or SRTP under another key, from anywhere: dropped, and not latched onto.
    await new Promise<void>((resolve) => sniffer.bind(0, '127.0.0.1', resolve));
    const plain = writeRtp({
      payloadType: 0,
      marker: false,
      sequence: 9,
      timestamp: 9,
      ssrc: 9,
      payload: Buffer.alloc(160, 0x33),
    });
    const forged = new SrtpContext(SrtpKey.random('AES_CM_128_HMAC_SHA1_80')).protect(plain);
    for (const packet of [plain, forged, plain, forged, plain, forged])
      await new Promise<void>((resolve) => sniffer.send(packet, portB, '127.0.0.1', () => resolve()));
    a.sendMedia(Buffer.alloc(160, 0x2b));
    await waitFor('B hears A again', () => heardByB.some((p) => p[0] === 0x2b), 2000);
    assert.ok(
      heardByB.every((p) => p[0] !== 0x33),
      'nothing unauthenticated was heard',
    );
    assert.equal(b.stats.received, 2);
  } finally {
    a.close();
    b.close();
    sniffer.close();
  }
});

test('an offer of SRTP Openline cannot do (DTLS-SRTP, AES-256 only, no key) is no offer it can take: 488', () => {
  const key = SrtpKey.random('AES_CM_128_HMAC_SHA1_80');
  assert.equal(remoteMedia(sdpOf('UDP/TLS/RTP/SAVP', ['a=fingerprint:sha-256 00:11', 'a=setup:actpass'])), undefined);
  assert.equal(remoteMedia(sdpOf('RTP/SAVP', [line(1, 'AES_256_CM_HMAC_SHA1_80', key)])), undefined);
  assert.equal(remoteMedia(sdpOf('RTP/SAVP', [])), undefined);
  assert.equal(remoteMedia(sdpOf('RTP/SAVP', [line(1, 'AES_CM_128_HMAC_SHA1_80', key, ' KDR=24')])), undefined);
});
