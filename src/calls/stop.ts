import type { Services } from '../services.js';
import type { Call } from '../store/calls.js';
import { JOB_IDS } from '../jobs/catalog.js';

export type StopResult = 'stopped' | 'ended';

/**
 * Stops a call that has not ended. A queued or scheduled call is canceled before it dials: it
 * completes with status `canceled` and length 0 (CONTRACT.md section 5); a ringing or live call is
 * hung up by the process running it, which then writes its final state.
 * Returns `ended` when the call had already ended.
 */
export async function stopCall(services: Services, call: Call): Promise<StopResult> {
  if (call.queue_status === 'queued') {
    await services.queue.cancel(JOB_IDS.dial({ call_id: call.id }));
    const now = services.clock.now().toISOString();
    const canceled = await services.calls.transition(call.id, ['queued'], {
      queue_status: 'complete',
      status: 'canceled',
      completed: true,
      call_length: 0,
      corrected_duration: 0,
      price: 0,
      ended_at: now,
    });
    if (canceled) return 'stopped';
  }
  const live = await services.calls.transition(call.id, ['queued', 'allocated', 'started'], {
    stop_requested_at: services.clock.now().toISOString(),
  });
  if (!live) return 'ended';
  // In this process the call hangs up at once; another process notices the request within a second.
  services.engine.stop(call.id);
  return 'stopped';
}
