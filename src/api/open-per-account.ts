/**
 * What each account holds open in this process (websocket sessions, event streams), under a
 * limit: a key's requests are rate limited, but what they leave open is not, and each open one
 * keeps costing (a stream reads its call every second).
 */
export class OpenPerAccount {
  private readonly open = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** One more for the account: the function that gives it back (once), or undefined at the limit. */
  take(accountId: string): (() => void) | undefined {
    const held = this.open.get(accountId) ?? 0;
    if (held >= this.limit) return undefined;
    this.open.set(accountId, held + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.open.get(accountId) ?? 1) - 1;
      if (left > 0) this.open.set(accountId, left);
      else this.open.delete(accountId);
    };
  }
}
