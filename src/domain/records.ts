/** Whether `value` is a plain JSON object (not null, not an array): the shape of a body or a stored setting. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
