import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LatencyTracker } from '../../src/media/latency.js';

test('interruption figures: a hold counts as echo-triggered only within half a second of echo the guard caught', () => {
  let now = 0;
  const latency = new LatencyTracker(() => now);
  // A hold with no echo heard at all.
  latency.held(80);
  latency.released('cut');
  // Echo caught, then a hold 300 ms later (echo that got past the guard), resumed with no words.
  now = 1000;
  latency.echoHeard(20);
  now = 1300;
  latency.held(60);
  latency.released('resumed', { words: false, afterMs: 200 });
  // A hold 800 ms after the last echo caught: the caller's voice.
  now = 2100;
  latency.held(70);
  latency.released('resumed', { words: true, afterMs: 250 });
  // A reply held before it was heard (the caller went on), just after echo: not the echo's doing.
  now = 3000;
  latency.echoHeard(20);
  now = 3100;
  latency.held(0, false);
  const figures = latency.report().interruptions;
  assert.deepEqual(
    [
      figures.held,
      figures.echo_holds,
      figures.reply_holds,
      figures.cut,
      figures.false_interruptions,
      figures.backchannels,
      figures.echo_ms,
    ],
    [4, 1, 1, 1, 1, 1, 40],
  );
});
