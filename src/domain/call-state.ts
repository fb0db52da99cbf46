/**
 * The call lifecycle of seed 3.1 in one place: which queue_status may follow which, and what the
 * `status` field reads for each.
 */
export type QueueStatus =
  | 'new'
  | 'queued'
  | 'allocated'
  | 'started'
  | 'complete'
  | 'pre_queue_error'
  | 'queue_error'
  | 'call_error'
  | 'complete_error';

const NEXT: Record<QueueStatus, readonly QueueStatus[]> = {
  new: ['queued', 'pre_queue_error'],
  // A queued call may also complete without ever connecting: canceled, no answer, busy.
  queued: ['allocated', 'queue_error', 'complete'],
  // Allocation is brief: the carrier connects (started), fails to (queue_error), or nobody answers.
  allocated: ['started', 'queue_error', 'complete', 'call_error'],
  started: ['complete', 'call_error'],
  // A post-call failure (e.g. the end-of-call webhook) marks a completed call; a later success clears it.
  complete: ['complete_error'],
  complete_error: ['complete'],
  pre_queue_error: [],
  queue_error: [],
  call_error: [],
};

export function canTransition(from: QueueStatus, to: QueueStatus): boolean {
  return NEXT[from].includes(to);
}

/** The states from which `to` may be entered (used as the guard of a conditional update). */
export function statesBefore(to: QueueStatus): QueueStatus[] {
  return (Object.keys(NEXT) as QueueStatus[]).filter((from) => NEXT[from].includes(to));
}

export const ENDED: readonly QueueStatus[] = [
  'complete',
  'complete_error',
  'pre_queue_error',
  'queue_error',
  'call_error',
];

export function isEnded(status: string): boolean {
  return (ENDED as readonly string[]).includes(status);
}

/** `status` is queue_status, except that a successful end reads `completed`. */
export function displayStatus(queueStatus: QueueStatus): string {
  return queueStatus === 'complete' ? 'completed' : queueStatus;
}
