/** A FIFO the call session awaits: carrier events, timers and its own speech results. */
export class EventQueue<T> {
  private items: T[] = [];
  private waiting: ((item: T) => void) | undefined;

  push(item: T): void {
    if (this.waiting) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve(item);
    } else {
      this.items.push(item);
    }
  }

  next(): Promise<T> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((resolve) => (this.waiting = resolve));
  }
}
