import { CallSession, type SessionOutcome } from '../calls/session.js';
import { ScaledClock, type Clock } from '../clock.js';
import type { Agent, Turn } from '../agent/types.js';
import type { CallLeg } from '../carriers/types.js';
import type { CallRequest } from '../schemas/call-request.js';
import { callRequest } from './call-request.js';

/**
 * A call session on `leg` with `agent`, running: the transcript as it is recorded, the
 * controller that stops the call (as the API's stop does), and its outcome. Defaults: an outbound
 * call with the seed's request defaults, on a clock ten times fast.
 */
export function runSession(
  leg: CallLeg,
  agent: Agent,
  options: { request?: CallRequest; inbound?: boolean; clock?: Clock; callId?: string } = {},
): { transcript: Turn[]; stop: AbortController; outcome: Promise<SessionOutcome> } {
  const transcript: Turn[] = [];
  const stop = new AbortController();
  const outcome = new CallSession({
    callId: options.callId ?? 'call-1',
    request: options.request ?? callRequest(),
    inbound: options.inbound ?? false,
    variables: {},
    leg,
    agent,
    clock: options.clock ?? new ScaledClock(10),
    recorder: { transcript: (turn) => Promise.resolve(void transcript.push(turn)) },
    signal: stop.signal,
  }).run();
  return { transcript, stop, outcome };
}
