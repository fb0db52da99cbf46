/** Time as the service sees it; tests swap in a clock they move by hand. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** ISO 8601 UTC text, the storage and response format of every time. */
export function iso(date: Date): string {
  return date.toISOString();
}
