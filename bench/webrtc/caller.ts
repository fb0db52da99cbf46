// The callers of `npm run bench:webrtc`, in a process of their own so that the server's CPU is
// its own: each is a WebRTC peer (werift, as a browser would be: ICE, DTLS-SRTP, PCMU and the
// `openline` data channel) that starts a web call with POST /v1/web-calls, listens to the agent's
// greeting, then asks one question and times the answer.
import { RtpHeader, RtpPacket } from 'werift';
import { browserPeer } from '../../src/testing/webrtc-browser.js';
import { decodeMulaw, MULAW_SILENCE, rms } from '../../src/media/audio.js';
import { callerUtterance } from '../media/speech.js';

export interface CallerFigures {
  /** From the start (offer made) to the answer of POST /v1/web-calls. */
  setupMs: number;
  /** From the start to the first voiced audio of the agent's greeting. */
  firstAudioMs: number;
  /** From the end of the caller's question to the first voiced audio of the answer. */
  voiceToVoiceMs: number | null;
}

const origin = process.env.BENCH_ORIGIN!;
const key = process.env.BENCH_KEY!;
const agentId = process.env.BENCH_AGENT!;
const calls = Number(process.env.BENCH_CALLS);
const holdMs = Number(process.env.BENCH_HOLD_MS);
/** A frame this loud is voice, not the line's silence. */
const VOICED_RMS = 300;
const question = callerUtterance();
/** The question's last voiced frame: its trailing silence is not part of the wait. */
const lastVoicedFrame = (() => {
  let last = 0;
  for (let i = 0; (i + 1) * 160 <= question.length; i++)
    if (rms(decodeMulaw(question.subarray(i * 160, (i + 1) * 160))) >= VOICED_RMS) last = i;
  return last;
})();
const SILENT: Buffer = Buffer.alloc(160, MULAW_SILENCE);
/** Quiet after which the greeting is over and the caller may ask. */
const GREETING_DONE_MS = 800;

async function call(index: number): Promise<CallerFigures> {
  const started = performance.now();
  const { pc, track, channel, sdp } = await browserPeer();
  let firstVoiced: number | undefined;
  let lastVoiced = 0;
  let questionEnded: number | undefined;
  let answered: number | undefined;
  pc.onTrack.subscribe((remote) =>
    remote.onReceiveRtp.subscribe((rtp) => {
      if (rms(decodeMulaw(rtp.payload)) < VOICED_RMS) return;
      const now = performance.now();
      firstVoiced ??= now;
      lastVoiced = now;
      if (questionEnded !== undefined && answered === undefined && now > questionEnded) answered = now;
    }),
  );
  const response = await fetch(`${origin}/v1/web-calls`, {
    method: 'POST',
    headers: { authorization: key, 'content-type': 'application/json' },
    body: JSON.stringify({ agent_id: agentId, sdp }),
  });
  const body = (await response.json()) as { sdp?: string; message?: string };
  if (!response.ok || !body.sdp) throw new Error(`call ${index}: ${response.status} ${body.message ?? ''}`);
  const setupMs = performance.now() - started;
  await pc.setRemoteDescription({ type: 'answer', sdp: body.sdp });

  // The microphone: silence, the question once the greeting is over, silence again.
  let sequence = 1;
  let timestamp = 0;
  let next = performance.now();
  let spoken = -1;
  const end = started + holdMs;
  while (performance.now() < end) {
    const now = performance.now();
    const greeted = firstVoiced !== undefined && now - lastVoiced > GREETING_DONE_MS;
    if (spoken < 0 && greeted) spoken = 0;
    let frame: Buffer = SILENT;
    if (spoken >= 0 && spoken * 160 < question.length) {
      frame = question.subarray(spoken * 160, spoken * 160 + 160);
      if (spoken === lastVoicedFrame) questionEnded = performance.now() + 20;
      spoken++;
    }
    if (frame.length === 160)
      track.writeRtp(new RtpPacket(new RtpHeader({ payloadType: 0, sequenceNumber: sequence, timestamp }), frame));
    sequence = (sequence + 1) & 0xffff;
    timestamp += 160;
    next += 20;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
  }
  channel.send(JSON.stringify({ type: 'hangup' }));
  await new Promise((resolve) => setTimeout(resolve, 200));
  await pc.close();
  return {
    setupMs,
    firstAudioMs: (firstVoiced ?? NaN) - started,
    voiceToVoiceMs: answered !== undefined && questionEnded !== undefined ? answered - questionEnded : null,
  };
}

// Calls start 100 ms apart, as people would not all press the button in the same millisecond.
const results = await Promise.allSettled(
  Array.from({ length: calls }, (_, i) => new Promise((resolve) => setTimeout(resolve, i * 100)).then(() => call(i))),
);
process.send!(
  results.map((r) => (r.status === 'fulfilled' ? r.value : { error: String(r.reason) })),
  () => process.exit(0),
);
