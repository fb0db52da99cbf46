import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TwilioCarrier } from '../../src/carriers/twilio/carrier.js';
import { TwilioMediaStream } from '../../src/carriers/twilio/media-stream.js';
import type { LegEvent } from '../../src/carriers/types.js';
import { audioLegSettings, createAudioLeg } from '../../src/media/audio-leg.js';
import { FrameScheduler } from '../../src/media/pacer.js';
import type { Vad } from '../../src/media/vad.js';
import { ScriptedStt, ToneTts } from '../../src/testing/audio-fakes.js';
import { callRequest } from '../../src/testing/call-request.js';
import { MemorySocket } from '../../src/testing/memory-socket.js';
import { EmulatedCall, TwilioEmulator } from '../../src/testing/twilio-emulator.js';
import { waitFor } from '../../src/testing/wait.js';
import { SERVER } from './setup.js';

/** A websocket whose peer never answers our close frame: ws reports it closed only after its 30 s timeout. */
class UnansweredSocket extends MemorySocket {
  override close(): void {
    this.readyState = 2;
  }
}

describe('Twilio status callbacks and the media stream', () => {
  const scheduler = new FrameScheduler({ phases: 4, aheadFrames: 2 });
  after(() => scheduler.stop());
  const silentVad: Vad = { name: 'silent', process: () => 0, reset() {} };

  function carrier(apiUrl = 'http://127.0.0.1:9'): TwilioCarrier {
    return new TwilioCarrier({
      // Nothing listens there: what the emulator posts to Openline is refused at once.
      publicUrl: 'http://127.0.0.1:9',
      apiUrl,
      server: SERVER,
      defaultFrom: undefined,
      calls: { byId: () => Promise.resolve(undefined) },
      credentials: { resolve: () => Promise.resolve(undefined) },
      audioLeg: (transport, request, callId, control) =>
        createAudioLeg(transport, audioLegSettings(callId, request, 'test-voice'), {
          stt: new ScriptedStt({ lines: [] }),
          tts: new ToneTts({ msPerChar: 10 }),
          vad: silentVad,
          scheduler,
          background: null,
          transfer: control.transfer,
          hangup: control.hangup,
        }),
    });
  }

  /** A call in progress on the emulator, from a caller to our number. */
  function liveCall(emulator: TwilioEmulator): EmulatedCall {
    const call = new EmulatedCall(
      'inbound',
      SERVER.accountSid,
      '+12025550400',
      '+14155550177',
      {},
      {
        events: [],
        timeoutS: 60,
      },
    );
    call.status = 'in-progress';
    emulator.calls.push(call);
    return call;
  }

  it('ends the call at once when Twilio reports it completed, even if the stream never finishes closing', () => {
    const twilio = carrier();
    const socket = new UnansweredSocket();
    const stream = new TwilioMediaStream(socket.ws, {
      streamSid: 'MZ1',
      callSid: 'CA1',
      accountSid: SERVER.accountSid,
      customParameters: {},
    });
    const leg = twilio.answerInbound('call-1', SERVER, stream, callRequest(), '+12025550400');
    const events: LegEvent[] = [];
    leg.on((event) => events.push(event));
    twilio.statusCallback('call-1', { CallSid: 'CA1', CallStatus: 'completed' });
    const hangup = events.find((event) => event.type === 'hangup');
    assert.ok(hangup, 'the leg hung up');
    assert.equal(hangup.reason, 'remote');
    assert.equal(socket.readyState, 2, 'the socket is being closed');
  });

  it('asks Twilio to end the call when the stream is lost without a stop, so the caller is not left on a dead line', async () => {
    const emulator = await TwilioEmulator.start([SERVER]);
    try {
      const twilio = carrier(emulator.url);
      const socket = new MemorySocket();
      const stream = new TwilioMediaStream(socket.ws, {
        streamSid: 'MZ2',
        callSid: 'CA2',
        accountSid: SERVER.accountSid,
        customParameters: {},
      });
      const leg = twilio.answerInbound('call-2', SERVER, stream, callRequest(), '+12025550400');
      const events: LegEvent[] = [];
      leg.on((event) => events.push(event));
      // The connection drops: no stop from Twilio, which may not notice for a long while.
      socket.readyState = 3;
      socket.emit('close', 1006, Buffer.alloc(0));
      assert.equal(events.find((event) => event.type === 'hangup')?.reason, 'network');
      const request = await waitFor('the hang-up request', () =>
        emulator.requests.find((r) => r.method === 'POST' && r.path.endsWith('/Calls/CA2.json')),
      );
      assert.equal(request.params.Status, 'completed');
    } finally {
      await emulator.close();
    }
  });

  it('forgets a call once it is over, whoever ended it: the far end, our hang-up or a transfer', async () => {
    const emulator = await TwilioEmulator.start([SERVER]);
    try {
      const twilio = carrier(emulator.url);
      const answer = (n: number, callSid = `CA${n}`) => {
        const socket = new MemorySocket();
        const stream = new TwilioMediaStream(socket.ws, {
          streamSid: `MZ${n}`,
          callSid,
          accountSid: SERVER.accountSid,
          customParameters: {},
        });
        return { stream, leg: twilio.answerInbound(`call-${n}`, SERVER, stream, callRequest(), '+12025550400') };
      };
      const far = answer(10);
      far.leg.on(() => undefined);
      far.stream.receive({ event: 'stop' });
      assert.equal(twilio.liveCalls, 0, 'hung up by the far end');
      await answer(11).leg.hangup();
      assert.equal(twilio.liveCalls, 0, 'hung up by us');
      // The emulator knows no such call: the transfer fails, and the call goes on.
      const failed = answer(12).leg;
      assert.equal((await failed.transfer('+14155550999')).ok, false);
      assert.equal(twilio.liveCalls, 1, 'a call whose transfer failed goes on');
      await failed.hangup();
      assert.equal(twilio.liveCalls, 0);
      // A call the emulator knows: the transfer is applied, and the call is over for us.
      const known = liveCall(emulator);
      const transferred = answer(13, known.sid).leg.transfer('+14155550999');
      await waitFor('the Dial', () => known.dialed);
      assert.equal(twilio.liveCalls, 1, 'the target is being reached');
      // Twilio's callback: the target answered.
      twilio.dialCallback('call-13', { CallSid: 'CA99', ParentCallSid: known.sid, CallStatus: 'in-progress' });
      assert.equal((await transferred).ok, true);
      assert.deepEqual(known.dialed, { number: '+14155550999', callerId: '+12025550400' });
      assert.equal(twilio.liveCalls, 0, 'transferred');
      // Hung up (a stop through the API) while the target rings: the transfer is given up, the call ended at Twilio.
      const ringing = liveCall(emulator);
      emulator.scripts.set('+14155550998', { outcome: 'no-answer', ringMs: 30_000 });
      const given = answer(14, ringing.sid).leg;
      const giving = given.transfer('+14155550998');
      await waitFor('the Dial', () => ringing.dialed);
      await given.hangup();
      assert.deepEqual(await giving, { ok: false, reason: 'The call ended before the transfer completed' });
      assert.equal(ringing.status, 'completed');
      assert.equal(twilio.liveCalls, 0);
    } finally {
      await emulator.close();
    }
  });

  it("keeps the call through the stop of a transfer's Dial, and ends it (and the transfer) when the caller hangs up while the target rings", async () => {
    const emulator = await TwilioEmulator.start([SERVER]);
    try {
      const twilio = carrier(emulator.url);
      const call = liveCall(emulator);
      emulator.scripts.set('+14155550998', { outcome: 'no-answer', ringMs: 30_000 });
      const socket = new MemorySocket();
      const stream = new TwilioMediaStream(socket.ws, {
        streamSid: 'MZ20',
        callSid: call.sid,
        accountSid: SERVER.accountSid,
        customParameters: {},
      });
      const leg = twilio.answerInbound('call-20', SERVER, stream, callRequest(), '+12025550400');
      const events: LegEvent[] = [];
      leg.on((event) => events.push(event));
      const transfer = leg.transfer('+14155550998');
      await waitFor('the Dial', () => call.dialed);
      // The Dial replaced the call's TwiML: Twilio stops the stream. The caller is on the line still.
      stream.receive({ event: 'stop' });
      assert.equal(events.length, 0, 'no hang-up');
      assert.equal(twilio.liveCalls, 1);
      // They hang up while the target rings.
      twilio.statusCallback('call-20', { CallSid: call.sid, CallStatus: 'completed' });
      assert.deepEqual(await transfer, { ok: false, reason: 'The call ended before the transfer completed' });
      assert.deepEqual(
        events.map((event) => event.type === 'hangup' && event.reason),
        ['remote'],
      );
      assert.equal(twilio.liveCalls, 0);
    } finally {
      await emulator.close();
    }
  });
});
