import { setImmediate as nextTurn } from 'node:timers/promises';

/** How long a long piece of work may hold the event loop before it lets other work run. */
export const SLICE_MS = 10;

/**
 * For work over many items on the event loop every call and request shares: the function returned
 * resolves at once while the current slice is under `budgetMs`, and otherwise after one turn of
 * the event loop (timers, sockets and other requests run), starting a new slice.
 */
export function slicer(budgetMs = SLICE_MS): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < budgetMs) return;
    await nextTurn();
    since = performance.now();
  };
}
