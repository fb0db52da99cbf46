import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  connectStreamTwiml,
  dialTwiml,
  emptyMessagingResponse,
  mediaStreamUrl,
  rejectTwiml,
} from '../../src/carriers/twilio/twiml.js';
import { isValidTwilioSignature, signedUrl, twilioSignature } from '../../src/carriers/twilio/signature.js';
import { parseStreamMessage } from '../../src/carriers/twilio/media-stream.js';
import { answeredByEvent, TwilioCarrier, unansweredResult } from '../../src/carriers/twilio/carrier.js';
import { parseTwiml } from '../../src/testing/twilio-emulator.js';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('TwiML', () => {
  it('connects the call to a bidirectional stream with escaped parameters', () => {
    const xml = connectStreamTwiml('wss://voice.example.com/twilio/media', { call_id: 'abc', token: 'a"b<c>&d\'' });
    assert.equal(
      xml,
      '<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://voice.example.com/twilio/media">' +
        '<Parameter name="call_id" value="abc"/><Parameter name="token" value="a&quot;b&lt;c>&amp;d\'"/></Stream></Connect></Response>',
    );
    // What Twilio reads back out of it: the same values.
    const verb = parseTwiml(xml);
    assert.deepEqual(verb, {
      verb: 'stream',
      url: 'wss://voice.example.com/twilio/media',
      parameters: { call_id: 'abc', token: 'a"b<c>&d\'' },
    });
  });

  it('derives the media URL from the public URL: wss for https, ws for http', () => {
    assert.equal(mediaStreamUrl('https://voice.example.com'), 'wss://voice.example.com/twilio/media');
    assert.equal(mediaStreamUrl('http://127.0.0.1:8080'), 'ws://127.0.0.1:8080/twilio/media');
    // Behind a proxy that serves Openline under a path: the path is kept.
    assert.equal(mediaStreamUrl('https://example.com/openline'), 'wss://example.com/openline/twilio/media');
  });

  it('transfers with Dial and a caller id, rejects, and acknowledges messages', () => {
    assert.match(
      dialTwiml('+14155550123', '+12125550100'),
      /<Response><Dial callerId="\+12125550100">\+14155550123<\/Dial><\/Response>$/,
    );
    assert.match(dialTwiml('+14155550123', null), /<Response><Dial>\+14155550123<\/Dial><\/Response>$/);
    assert.match(rejectTwiml(), /<Response><Reject\/><\/Response>$/);
    assert.match(emptyMessagingResponse(), /<Response\/>$/);
  });
});

describe('X-Twilio-Signature', () => {
  const token = 'test-auth-token';
  const url = signedUrl('https://voice.example.com/', '/twilio/status?call_id=c1');
  const params = { CallSid: 'CA1', CallStatus: 'ringing', To: '+14155550123' };

  it('is the public URL plus path and query', () => {
    assert.equal(url, 'https://voice.example.com/twilio/status?call_id=c1');
  });

  it('is checked over the very URL Openline gives Twilio, also under a public URL with a path', () => {
    for (const publicUrl of ['https://voice.example.com', 'https://example.com/openline']) {
      const carrier = new TwilioCarrier({
        publicUrl,
        apiUrl: 'http://127.0.0.1:9',
        server: undefined,
        defaultFrom: undefined,
        calls: { byId: () => Promise.resolve(undefined) },
        credentials: { resolve: () => Promise.resolve(undefined) },
      });
      // Twilio signs the URL it was given; the proxy forwards its path and query below the public URL's path.
      const given = carrier.webhookUrl('/twilio/status?call_id=c1');
      assert.equal(given, `${publicUrl}/twilio/status?call_id=c1`);
      const signature = twilioSignature(token, given, params);
      assert.equal(
        isValidTwilioSignature(token, signature, signedUrl(publicUrl, '/twilio/status?call_id=c1'), params),
        true,
      );
      assert.deepEqual(carrier.numberWebhooks(), {
        voiceUrl: `${publicUrl}/twilio/voice`,
        smsUrl: `${publicUrl}/twilio/sms`,
      });
    }
  });

  it("accepts Twilio's signature and refuses any change to URL, parameters or token", () => {
    const signature = twilioSignature(token, url, params);
    assert.equal(isValidTwilioSignature(token, signature, url, params), true);
    assert.equal(isValidTwilioSignature(token, signature, url, { ...params, CallStatus: 'completed' }), false);
    assert.equal(isValidTwilioSignature(token, signature, url.replace('c1', 'c2'), params), false);
    assert.equal(isValidTwilioSignature('other-token', signature, url, params), false);
    assert.equal(isValidTwilioSignature(token, undefined, url, params), false);
    assert.equal(isValidTwilioSignature(token, 'garbage', url, params), false);
  });
});

describe('media stream messages', () => {
  it('reads start, media, dtmf, mark and stop as Twilio sends them', () => {
    const start = parseStreamMessage(
      JSON.stringify({
        event: 'start',
        sequenceNumber: '1',
        start: {
          accountSid: 'AC1',
          streamSid: 'MZ1',
          callSid: 'CA1',
          tracks: ['inbound'],
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
          customParameters: { token: 't', call_id: 'c' },
        },
        streamSid: 'MZ1',
      }),
    );
    assert.deepEqual(start, {
      event: 'start',
      start: { streamSid: 'MZ1', callSid: 'CA1', accountSid: 'AC1', customParameters: { token: 't', call_id: 'c' } },
    });
    const media = parseStreamMessage(
      JSON.stringify({
        event: 'media',
        sequenceNumber: '3',
        media: { track: 'inbound', chunk: '2', timestamp: '20', payload: Buffer.from([1, 2, 3]).toString('base64') },
        streamSid: 'MZ1',
      }),
    );
    assert.deepEqual(media, { event: 'media', payload: Buffer.from([1, 2, 3]), timestampMs: 20, track: 'inbound' });
    assert.deepEqual(
      parseStreamMessage(
        '{"event":"dtmf","streamSid":"MZ1","sequenceNumber":"5","dtmf":{"track":"inbound_track","digit":"7"}}',
      ),
      { event: 'dtmf', digit: '7' },
    );
    assert.deepEqual(parseStreamMessage('{"event":"mark","streamSid":"MZ1","mark":{"name":"w3"}}'), {
      event: 'mark',
      name: 'w3',
    });
    assert.deepEqual(parseStreamMessage('{"event":"stop","stop":{"accountSid":"AC1","callSid":"CA1"}}'), {
      event: 'stop',
    });
  });

  it('reads media messages from the raw frame the same as from text, whatever their form', () => {
    const payload = Buffer.from(Array.from({ length: 160 }, (_, i) => (i * 37) & 0xff));
    const expected = { event: 'media', payload, timestampMs: 40, track: 'inbound' };
    const twilio = JSON.stringify({
      event: 'media',
      sequenceNumber: '4',
      media: { track: 'inbound', chunk: '3', timestamp: '40', payload: payload.toString('base64') },
      streamSid: 'MZ1',
    });
    assert.deepEqual(parseStreamMessage(Buffer.from(twilio)), expected);
    assert.deepEqual(parseStreamMessage(twilio), expected);
    // Other key orders, spacing and escapes are read by the general parser, with the same result.
    const reordered = JSON.stringify({
      streamSid: 'MZ1',
      media: { payload: payload.toString('base64'), timestamp: '40', track: 'inbound' },
      event: 'media',
    });
    assert.deepEqual(parseStreamMessage(Buffer.from(reordered)), expected);
    const spaced = JSON.stringify(JSON.parse(twilio), null, 1);
    assert.deepEqual(parseStreamMessage(Buffer.from(spaced)), expected);
    const escaped = twilio.replace('"MZ1"', '"MZ\\u0031"').replace('"track":"inbound"', '"track":"in\\u0062ound"');
    assert.deepEqual(parseStreamMessage(Buffer.from(escaped)), expected);
    const outbound = twilio.replace('"track":"inbound"', '"track":"outbound"');
    assert.equal((parseStreamMessage(Buffer.from(outbound)) as { track: string }).track, 'outbound');
    assert.equal(parseStreamMessage(Buffer.from('{"event":"media","media":{"track":"inbound"}}')), undefined);
    assert.equal(parseStreamMessage(Buffer.from('{"event":"media","media":{"payload":"AAAA"')), undefined);
  });

  it('ignores malformed and unknown messages', () => {
    assert.equal(parseStreamMessage('not json'), undefined);
    assert.equal(parseStreamMessage('[1]'), undefined);
    assert.equal(parseStreamMessage('{"event":"start","start":{}}'), undefined);
    assert.equal(parseStreamMessage('{"event":"dtmf","dtmf":{"digit":"x"}}'), undefined);
    assert.equal(parseStreamMessage('{"event":"unheard-of"}'), undefined);
  });
});

describe('call outcomes', () => {
  it('maps async AMD AnsweredBy into answered_by', () => {
    const at = new Date(0);
    assert.equal(answeredByEvent('human', at)?.answeredBy, 'human');
    for (const machine of ['machine_end_beep', 'machine_end_silence', 'machine_end_other']) {
      assert.deepEqual(answeredByEvent(machine, at), {
        type: 'answered_by',
        at,
        answeredBy: 'voicemail',
        messageEnded: true,
      });
    }
    assert.deepEqual(answeredByEvent('machine_start', at), {
      type: 'answered_by',
      at,
      answeredBy: 'voicemail',
      messageEnded: false,
    });
    assert.equal(answeredByEvent('fax', at)?.answeredBy, 'unknown');
    assert.equal(answeredByEvent('unknown', at)?.answeredBy, 'unknown');
    assert.equal(answeredByEvent('something-else', at), undefined);
  });

  it('maps final statuses before an answer into dial results', () => {
    assert.deepEqual(unansweredResult('busy'), { status: 'busy' });
    assert.deepEqual(unansweredResult('no-answer'), { status: 'no-answer' });
    assert.deepEqual(unansweredResult('canceled'), { status: 'no-answer' });
    assert.deepEqual(unansweredResult('failed', '32009'), {
      status: 'failed',
      reason: 'Twilio could not place the call (error 32009)',
    });
    assert.equal(unansweredResult('completed').status, 'failed');
  });
});

describe('Twilio configuration', () => {
  const sid = `AC${'0'.repeat(32)}`;

  it('reads the server account, the API origin and the default caller id', () => {
    const config = loadConfig({
      TWILIO_ACCOUNT_SID: sid,
      TWILIO_AUTH_TOKEN: 'token',
      OPENLINE_TWILIO_API_URL: 'http://127.0.0.1:9999/',
      TWILIO_PHONE_NUMBER: '+14155550123',
    });
    assert.deepEqual(config.twilio, { accountSid: sid, authToken: 'token' });
    assert.equal(config.twilioApiUrl, 'http://127.0.0.1:9999');
    assert.equal(config.twilioPhoneNumber, '+14155550123');
    const none = loadConfig({});
    assert.equal(none.twilio, undefined);
    assert.equal(none.twilioApiUrl, 'https://api.twilio.com');
  });

  it('names the variable that is wrong', () => {
    const fails = (env: Record<string, string>, variable: string) =>
      assert.throws(
        () => loadConfig(env),
        (e: unknown) => e instanceof ConfigError && e.variable === variable,
      );
    fails({ TWILIO_ACCOUNT_SID: sid }, 'TWILIO_AUTH_TOKEN');
    fails({ TWILIO_AUTH_TOKEN: 'token' }, 'TWILIO_ACCOUNT_SID');
    fails({ TWILIO_ACCOUNT_SID: 'AC123', TWILIO_AUTH_TOKEN: 'token' }, 'TWILIO_ACCOUNT_SID');
    fails({ TWILIO_PHONE_NUMBER: '415 555 0123' }, 'TWILIO_PHONE_NUMBER');
    fails({ OPENLINE_TWILIO_API_URL: 'ftp://x' }, 'OPENLINE_TWILIO_API_URL');
    // Twilio opens media streams to wss:// URLs only (error 31922), and cannot reach localhost.
    const account = { TWILIO_ACCOUNT_SID: sid, TWILIO_AUTH_TOKEN: 'token' };
    fails(account, 'OPENLINE_PUBLIC_URL');
    fails({ ...account, OPENLINE_PUBLIC_URL: 'http://voice.example.com' }, 'OPENLINE_PUBLIC_URL');
    assert.equal(
      loadConfig({ ...account, OPENLINE_PUBLIC_URL: 'https://voice.example.com' }).publicUrl,
      'https://voice.example.com',
    );
  });
});
