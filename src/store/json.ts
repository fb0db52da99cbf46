/** JSON columns: text in both dialects. */
export function toJson(value: unknown): string {
  return JSON.stringify(value ?? null);
}

export function fromJson<T>(text: string | null | undefined, fallback: T): T {
  if (text === null || text === undefined || text === '') return fallback;
  return JSON.parse(text) as T;
}

export const bool = (value: boolean | undefined | null): number => (value ? 1 : 0);
export const isTrue = (value: number | boolean | null | undefined): boolean => value === 1 || value === true;
