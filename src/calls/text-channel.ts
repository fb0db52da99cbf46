/**
 * The words of a reply as the agent writes them: pushed by the agent's stream, read by the leg
 * that says them. Closing ends the reading once what was pushed has been read.
 */
export class TextChannel implements AsyncIterable<string> {
  private readonly pieces: string[] = [];
  private closed = false;
  private wake: (() => void) | undefined;
  /** Everything pushed so far. */
  text = '';

  push(piece: string): void {
    if (this.closed || piece === '') return;
    this.pieces.push(piece);
    this.text += piece;
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<string> {
    for (;;) {
      const piece = this.pieces.shift();
      if (piece !== undefined) {
        yield piece;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
