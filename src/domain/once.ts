/**
 * `make` run on the first call and its result kept for every later one: a thing built only when
 * it is first needed (a compiled schema, a library loaded on its first use).
 */
export function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}
