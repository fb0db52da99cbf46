import assert from 'node:assert/strict';
import { test } from 'node:test';

import { FRAME_SAMPLES } from '../../src/media/audio.js';
import { ScaledClock } from '../../src/clock.js';
import {
  FrameScheduler,
  LatenessStats,
  clockTimer,
  realTimer,
  type FrameFill,
  type PacerTimer,
} from '../../src/media/pacer.js';
import { ManualTimer } from '../../src/testing/manual-timer.js';

function frames(n: number, first = 0): Buffer[] {
  return Array.from({ length: n }, (_, i) => Buffer.alloc(FRAME_SAMPLES, (first + i) & 0xff));
}

/** A sink that records what it was sent, with the time. */
function recordingSink(timer: PacerTimer) {
  const events: string[] = [];
  const times: number[] = [];
  return {
    events,
    times,
    sendMedia(frame: Buffer) {
      events.push(`f${frame[0]}`);
      times.push(timer.now());
    },
    sendMark(name: string) {
      events.push(`mark:${name}`);
    },
  };
}

test('frames leave one per 20 ms slot, the first at once after silence', () => {
  const timer = new ManualTimer(1000);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0 });
  const sink = recordingSink(timer);
  const pacer = scheduler.createPacer(sink);
  pacer.enqueue(frames(5));
  timer.advance(200);
  assert.deepEqual(sink.events, ['f0', 'f1', 'f2', 'f3', 'f4']);
  assert.deepEqual(sink.times, [1000, 1020, 1040, 1060, 1080]);
  assert.equal(pacer.framesSent, 5);
  assert.equal(scheduler.running, false, 'the timer stops when no call has anything to send');
});

test('with phases, calls send on staggered slots, each still one frame every 20 ms', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0, phases: 4 });
  const sinks = Array.from({ length: 8 }, () => recordingSink(timer));
  const pacers = sinks.map((sink) => scheduler.createPacer(sink, { startImmediately: false }));
  assert.deepEqual(
    pacers.map((p) => p.phase),
    [0, 1, 2, 3, 0, 1, 2, 3],
  );
  for (const pacer of pacers) pacer.enqueue(frames(10));
  timer.advance(400);
  sinks.forEach((sink, i) => {
    assert.equal(sink.times.length, 10, `call ${i}`);
    // The grid started at 0: sub-slot j is due at 5 j, and phase p owns the sub-slots j = p (mod 4).
    const phase = i % 4;
    const first = phase === 0 ? 20 : 5 * phase;
    sink.times.forEach((t, k) => assert.equal(t, first + 20 * k, `call ${i} frame ${k}`));
  });
  assert.equal(scheduler.stats.lateFrames, 0);
  assert.equal(scheduler.stats.maxMs, 0);
});

test('with phases, a stall is caught up in order and its lateness counted per call', () => {
  const manual = new ManualTimer(0);
  let stallOnce = true;
  // The timer due at 45 ms fires at 95 ms (a 50 ms stall).
  const stalling: PacerTimer = {
    now: () => manual.now(),
    setTimer: (fn, ms) => {
      const at = manual.now() + ms;
      const extra = stallOnce && at >= 45 ? ((stallOnce = false), 95 - at) : 0;
      return manual.setTimer(fn, ms + extra);
    },
  };
  const scheduler = new FrameScheduler({ timer: stalling, earlyMs: 0, phases: 4 });
  const sinks = Array.from({ length: 4 }, () => recordingSink(stalling));
  for (const sink of sinks) scheduler.createPacer(sink, { startImmediately: false }).enqueue(frames(20));
  manual.advance(1000);
  for (const sink of sinks) {
    assert.equal(sink.times.length, 20);
    for (let k = 1; k < sink.times.length; k++) assert.ok(sink.times[k]! >= sink.times[k - 1]!);
  }
  assert.ok(scheduler.stats.maxMs >= 45 && scheduler.stats.maxMs <= 50, `max lateness ${scheduler.stats.maxMs}`);
  assert.equal(scheduler.skippedSlots, 0);
});

test('deadlines are absolute: a timer that always fires late does not drift', () => {
  const manual = new ManualTimer(0);
  // Every timer fires 7 ms after it was asked to.
  const late: PacerTimer = { now: () => manual.now(), setTimer: (fn, ms) => manual.setTimer(fn, ms + 7) };
  const scheduler = new FrameScheduler({ timer: late, earlyMs: 0 });
  const sink = recordingSink(late);
  scheduler.createPacer(sink, { startImmediately: false }).enqueue(frames(50));
  manual.advance(2000);
  assert.equal(sink.times.length, 50);
  // Frame k leaves at 20 (k + 1) + 7: lateness stays 7 ms, it never accumulates.
  sink.times.forEach((t, k) => assert.equal(t, 20 * (k + 1) + 7, `frame ${k}`));
  assert.equal(scheduler.stats.percentile(0.99), 7);
  assert.equal(scheduler.stats.lateFrames, 0);
});

test('after a stall the overdue slots run back to back, and beyond the catch-up limit are skipped', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0, maxCatchUpSlots: 5 });
  const sink = recordingSink(timer);
  const pacer = scheduler.createPacer(sink);
  pacer.enqueue(frames(40));
  timer.advance(40); // f0 at 0, f1 at 20, f2 at 40
  timer.stall(85); // the loop is blocked until 125: slots 60, 80, 100, 120 are overdue
  timer.advance(0);
  assert.deepEqual(sink.times, [0, 20, 40, 125, 125, 125, 125]);
  assert.equal(scheduler.stats.lateFrames, 3, 'the frames of slots 60, 80 and 100 left more than 20 ms late');
  assert.equal(scheduler.skippedSlots, 0);
  timer.advance(15); // slot 140 on time again
  assert.equal(sink.times.at(-1), 140);

  timer.stall(500); // 25 slots overdue: only the last 5 run
  timer.advance(0);
  assert.equal(sink.times.filter((t) => t === 640).length, 5);
  assert.equal(scheduler.skippedSlots, 20);
  assert.equal(pacer.lateFrames, scheduler.stats.lateFrames);
});

test('with aheadFrames, audio starts with the cushion at once, then one frame per slot', () => {
  const timer = new ManualTimer(1000);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0, aheadFrames: 2 });
  const sink = recordingSink(timer);
  const pacer = scheduler.createPacer(sink);
  pacer.enqueue(frames(6));
  timer.advance(200);
  assert.deepEqual(sink.events, ['f0', 'f1', 'f2', 'f3', 'f4', 'f5']);
  assert.deepEqual(sink.times, [1000, 1000, 1000, 1020, 1040, 1060]);
  assert.equal(scheduler.stats.maxMs, 0);
});

test('with aheadFrames, frames queued one at a time (streaming speech) fill the cushion as they come', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0, aheadFrames: 2 });
  const sink = recordingSink(timer);
  const pacer = scheduler.createPacer(sink);
  for (let i = 0; i < 5; i++) pacer.enqueue(frames(1, i));
  assert.deepEqual(sink.times, [0, 0, 0], 'the first frame and two ahead leave at once, the rest wait');
  timer.advance(100);
  assert.deepEqual(sink.times, [0, 0, 0, 20, 40]);
});

test('with aheadFrames, a stall shorter than the cushion makes no frame late; a longer one does, then the cushion is rebuilt', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0, aheadFrames: 2 });
  const sink = recordingSink(timer);
  const pacer = scheduler.createPacer(sink);
  pacer.enqueue(frames(60));
  timer.advance(40); // f0-f2 at 0, f3 at 20, f4 at 40: the far end holds f2..f4 (until 100)
  timer.stall(55); // blocked until 95: slot 60 and 80 overdue, the far end still has audio
  timer.advance(0);
  assert.deepEqual(sink.times.slice(5), [95, 95]);
  assert.equal(scheduler.stats.lateFrames, 0);
  assert.equal(scheduler.stats.maxMs, 0);
  timer.advance(5); // slot 100 on time
  // The far end holds audio until 160 (f0..f7); blocked until 260 it plays nothing from 160.
  timer.stall(160);
  timer.advance(0);
  assert.ok(scheduler.stats.lateFrames > 0, 'frames the far end needed before 240 came late');
  // Slots 120..260 run back to back, and the cushion is sent again behind them.
  const at260 = sink.times.filter((t) => t === 260).length;
  assert.equal(at260, 8 + 2);
  timer.advance(20);
  assert.equal(sink.times.at(-1), 280);
  assert.equal(pacer.lateFrames, scheduler.stats.lateFrames);
});

test('with aheadFrames, a background fill keeps the cushion; clear (barge-in) starts it afresh', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0, aheadFrames: 2 });
  const sink = recordingSink(timer);
  const fill: FrameFill = { fill: () => Buffer.alloc(FRAME_SAMPLES, 200) };
  const pacer = scheduler.createPacer(sink, { fill });
  timer.advance(60);
  assert.deepEqual(sink.times, [20, 20, 20, 40, 60]);
  pacer.enqueue(frames(2));
  // Behind the two frames of background the far end holds.
  timer.advance(40);
  assert.deepEqual(sink.events.slice(5), ['f0', 'f1']);
  pacer.clear();
  timer.advance(20);
  assert.deepEqual(sink.times.slice(7), [120, 120, 120], 'after a clear the far end is empty: the cushion again');
  assert.equal(scheduler.stats.lateFrames, 0);
});

test('rewind: a held queue takes back the frames the far end has not started playing, with their marks renamed', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0, aheadFrames: 2 });
  const sink = recordingSink(timer);
  const pacer = scheduler.createPacer(sink);
  pacer.enqueue(frames(3));
  pacer.enqueue(frames(2, 3));
  pacer.mark('a');
  pacer.enqueue(frames(5, 5));
  timer.advance(50);
  // f0..f2 at 0 (playing 0..60), f3 at 20 (60..80), f4 at 40 (80..100), then the mark behind it.
  assert.deepEqual(sink.events, ['f0', 'f1', 'f2', 'f3', 'f4', 'mark:a']);
  pacer.pause();
  const renamed: string[] = [];
  // At 50 the far end is playing f2: f3 and f4 (and the mark after them) go back in the queue.
  assert.equal(
    pacer.rewind((name) => (renamed.push(name), `${name}2`)),
    40,
  );
  assert.deepEqual(renamed, ['a']);
  assert.equal(pacer.queuedMs, 7 * 20);
  timer.advance(50);
  assert.equal(sink.events.length, 6, 'nothing leaves while held');
  pacer.resume();
  timer.advance(200);
  assert.deepEqual(sink.events.slice(6), ['f3', 'f4', 'mark:a2', 'f5', 'f6', 'f7', 'f8', 'f9']);
  // The far end was emptied: the cushion is sent at once again.
  assert.deepEqual(sink.times.slice(5, 8), [120, 120, 120]);
});

test('rewind with nothing sent ahead (the far end played it all) takes nothing back', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0, aheadFrames: 2 });
  const sink = recordingSink(timer);
  const pacer = scheduler.createPacer(sink);
  pacer.enqueue(frames(2));
  timer.advance(100);
  pacer.pause();
  assert.equal(
    pacer.rewind((name) => name),
    0,
  );
  assert.equal(pacer.queuedMs, 0);
});

test('a mark fires when the audio queued before it has been sent, in order with the frames', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0 });
  const sink = recordingSink(timer);
  const reached: [string, number][] = [];
  const pacer = scheduler.createPacer(sink, { onMark: (name) => reached.push([name, timer.now()]) });
  pacer.mark('before-anything');
  pacer.enqueue(frames(3));
  pacer.mark('a');
  pacer.enqueue(frames(2, 3));
  pacer.mark('b');
  timer.advance(200);
  assert.deepEqual(sink.events, ['mark:before-anything', 'f0', 'f1', 'f2', 'mark:a', 'f3', 'f4', 'mark:b']);
  assert.deepEqual(reached, [
    ['before-anything', 0],
    ['a', 40],
    ['b', 80],
  ]);
});

test('clear drops queued audio and marks, reports the milliseconds dropped, and wakes drain waiters', async () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0 });
  const sink = recordingSink(timer);
  let drains = 0;
  const pacer = scheduler.createPacer(sink, { onDrain: () => drains++ });
  pacer.enqueue(frames(10));
  pacer.mark('never');
  timer.advance(40); // 3 frames sent
  assert.equal(pacer.queuedMs, 140);
  const waiting = pacer.drained();
  assert.equal(pacer.clear(), 140);
  await waiting;
  assert.equal(pacer.queuedMs, 0);
  timer.advance(200);
  assert.deepEqual(sink.events, ['f0', 'f1', 'f2']);
  assert.equal(drains, 0, 'onDrain is for audio that was sent, not dropped');
  assert.equal(scheduler.running, false);
});

test('onDrain and drained() tell when the last queued frame has gone', async () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0 });
  const drainedAt: number[] = [];
  const pacer = scheduler.createPacer(recordingSink(timer), { onDrain: () => drainedAt.push(timer.now()) });
  await pacer.drained(); // nothing queued: at once
  pacer.enqueue(frames(4));
  let resolved = false;
  void pacer.drained().then(() => (resolved = true));
  timer.advance(40);
  await Promise.resolve();
  assert.equal(resolved, false);
  timer.advance(20);
  await Promise.resolve();
  assert.equal(resolved, true);
  assert.deepEqual(drainedAt, [60]);
});

test('a fill plays in empty slots and is mixed under queued frames as they leave', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0 });
  const sink = recordingSink(timer);
  let position = 0;
  const fill: FrameFill = {
    fill: () => Buffer.alloc(FRAME_SAMPLES, 200 + (position++ % 10)),
    mix: (frame) => {
      position++;
      return Buffer.alloc(FRAME_SAMPLES, frame[0]! + 100);
    },
  };
  const pacer = scheduler.createPacer(sink, { fill });
  timer.advance(60); // slots 20, 40, 60: background only
  pacer.enqueue(frames(2)); // the background keeps the far end busy: no immediate send
  timer.advance(80);
  assert.deepEqual(sink.events, ['f200', 'f201', 'f202', 'f100', 'f101', 'f205', 'f206']);
  assert.equal(pacer.fillFramesSent, 5);
  assert.equal(pacer.framesSent, 2);
  pacer.setFill(null);
  timer.advance(100);
  assert.equal(sink.events.length, 7);
  assert.equal(scheduler.running, false);
});

test('after silence the first frame goes at once; while the far end still plays it waits for its slot', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0 });
  const sink = recordingSink(timer);
  // Another call keeps the grid running (slots at 20 n).
  scheduler.createPacer(recordingSink(timer)).enqueue(frames(100));
  const pacer = scheduler.createPacer(sink);
  timer.advance(7);
  pacer.enqueue(frames(2)); // at 7: sent now, then slot 20
  timer.advance(20); // 27
  assert.deepEqual(sink.times, [7, 20]);
  // The far end plays until 7 + 40 = 47: new audio at 33 waits for slot 40.
  timer.advance(6); // 33
  pacer.enqueue(frames(1));
  assert.equal(sink.times.length, 2);
  timer.advance(10); // 43
  assert.deepEqual(sink.times, [7, 20, 40]);
  // Long idle: at 105 the far end has run dry (played out at 67): sent at once.
  timer.advance(62);
  pacer.enqueue(frames(1));
  assert.deepEqual(sink.times, [7, 20, 40, 105]);
});

test('hundreds of calls share one timer', () => {
  const timer = new ManualTimer(0);
  let armed = 0;
  const counting: PacerTimer = {
    now: () => timer.now(),
    setTimer: (fn, ms) => {
      armed++;
      return timer.setTimer(fn, ms);
    },
  };
  const scheduler = new FrameScheduler({ timer: counting, earlyMs: 0 });
  let sent = 0;
  const sink = { sendMedia: () => sent++ };
  for (let i = 0; i < 300; i++) scheduler.createPacer(sink).enqueue(frames(50));
  assert.equal(timer.pending, 1);
  timer.advance(1000);
  assert.equal(sent, 300 * 50);
  assert.ok(armed <= 51, `one timer per slot, got ${armed} for 50 slots`);
  assert.equal(scheduler.activeCount, 0);
});

test('a sink that throws closes its own pacer and no other', () => {
  const timer = new ManualTimer(0);
  const scheduler = new FrameScheduler({ timer, earlyMs: 0 });
  const good = recordingSink(timer);
  const errors: unknown[] = [];
  let calls = 0;
  const bad = scheduler.createPacer(
    {
      sendMedia: () => {
        if (++calls === 2) throw new Error('socket closed');
      },
    },
    { onError: (error) => errors.push(error) },
  );
  bad.enqueue(frames(5));
  scheduler.createPacer(good).enqueue(frames(5));
  timer.advance(200);
  assert.equal(errors.length, 1);
  assert.equal(bad.isClosed, true);
  assert.equal(good.events.length, 5);
  bad.enqueue(frames(1)); // ignored once closed
  assert.equal(calls, 2);
});

test('enqueue rejects frames that are not 20 ms of mu-law', () => {
  const scheduler = new FrameScheduler({ timer: new ManualTimer() });
  const pacer = scheduler.createPacer({ sendMedia: () => {} });
  assert.throws(() => pacer.enqueue([Buffer.alloc(100)]), /160 bytes/);
});

test('lateness percentiles come from a fixed histogram', () => {
  const stats = new LatenessStats();
  for (let i = 0; i < 98; i++) stats.record(1.05);
  stats.record(25);
  stats.record(-3); // early counts as on time
  assert.equal(stats.frames, 100);
  assert.equal(stats.lateFrames, 1);
  assert.ok(Math.abs(stats.percentile(0.5) - 1.1) < 1e-9);
  assert.ok(Math.abs(stats.percentile(0.99) - 1.1) < 1e-9);
  assert.equal(stats.percentile(1), 25);
  assert.equal(stats.maxMs, 25);
  stats.reset();
  assert.equal(stats.percentile(0.5), 0);
});

test('on an accelerated clock frames are paced in clock time', async () => {
  const clock = new ScaledClock(100);
  const scheduler = new FrameScheduler({ timer: clockTimer(clock) });
  const times: number[] = [];
  const pacer = scheduler.createPacer({ sendMedia: () => times.push(clock.now().getTime()) });
  pacer.enqueue(frames(50));
  await pacer.drained();
  assert.equal(times.length, 50);
  // Never faster than the clock: 49 slots after the first frame (the clock reads in 100 ms steps here).
  assert.ok(times.at(-1)! - times[0]! >= 49 * 20 - 100, `sent over ${times.at(-1)! - times[0]!} clock ms`);
  assert.equal(clockTimer(new ScaledClock(1)), realTimer, 'scale 1 is real time');
});

test('deferred work runs in order, in slices that let a timer come due between them', async () => {
  const scheduler = new FrameScheduler({ sliceMs: 4 });
  const ran: number[] = [];
  let timerFiredAfter = -1;
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end);
  };
  // A burst of 100 tasks of 1 ms each, and a timer due as they start: it must not wait 100 ms.
  const timerDue = new Promise<void>((resolve) =>
    setTimeout(() => {
      timerFiredAfter = ran.length;
      resolve();
    }, 0),
  );
  for (let i = 0; i < 100; i++)
    scheduler.defer(() => {
      busy(1);
      ran.push(i);
    });
  assert.equal(scheduler.deferredCount, 100);
  assert.equal(ran.length, 0, 'nothing runs at once');
  await timerDue;
  // All of it done, however loaded the machine (100 ms of work, in slices between other timers).
  for (let waited = 0; scheduler.deferredCount > 0 && waited < 10_000; waited += 20)
    await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(
    ran,
    Array.from({ length: 100 }, (_, i) => i),
    'every task, in order',
  );
  assert.equal(scheduler.deferredCount, 0);
  assert.ok(timerFiredAfter >= 0 && timerFiredAfter < 50, `the timer ran after ${timerFiredAfter} of the 100 tasks`);
  // Work deferred later starts a new round.
  scheduler.defer(() => ran.push(100));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(ran.at(-1), 100);
});
