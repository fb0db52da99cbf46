/**
 * The carrier side of bench/media/run.ts, in its own process (as Twilio is on its own machines):
 * opens N Twilio Media Streams websockets to the server under test and drives each like Twilio
 * does: `connected`, `start` (with customParameters), a `media` frame every 20 ms (line silence,
 * or the caller's utterance on its schedule), `mark` echoed once the audio sent before it has
 * played (a real-time play-out per call), `clear` honoured, `stop` at the end. It counts the gaps
 * a caller would hear: media arriving more than 20 ms after what came before finished playing. It
 * sees a frame arrive only when its own event loop gets to it, so it also reports how long that
 * loop was held up (it shares the machine, at a lower priority): a gap no longer than that may be
 * its own.
 *
 * Each media message's `timestamp` is the frame's real send time since the stream started, and the
 * start carries the stream's start instant (epoch ms), so the server can tell how late it handled
 * each frame.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { WebSocket } from 'ws';

interface StartCommand {
  cmd: 'start';
  url: string;
  calls: number;
  durationMs: number;
  /** The caller's utterance as base64 mu-law frames (concatenated). */
  utterance: string;
  /** First utterance this long after the start, then one every cycleMs. */
  firstTalkMs: number;
  cycleMs: number;
}

const FRAME_MS = 20;
/**
 * How often the streams are looked at: each stream sends on its own 20 ms grid (streams start
 * at staggered instants, as calls do), so frames leave spread out as they do from Twilio, not in
 * bursts of a quarter of the calls every 5 ms.
 */
const TICK_MS = 1;
const MEDIA_START = Buffer.from('{"event":"media",');
const SILENT = Buffer.alloc(160, 0xff).toString('base64');
const epoch = () => performance.timeOrigin + performance.now();

interface Stream {
  socket: WebSocket;
  sid: string;
  t0: number;
  open: boolean;
  /** Next frame of the utterance being said, or -1 while silent. */
  talkAt: number;
  nextTalk: number;
  playedUntil: number;
  pendingMarks: { name: string; at: number }[];
  sent: number;
  seq: number;
  /** Media frames that arrived after what came before had finished playing (a gap heard), and the longest gap. */
  gaps: number;
  maxGapMs: number;
}

const loopDelay = monitorEventLoopDelay({ resolution: 1 });

function run(command: StartCommand): void {
  loopDelay.enable();
  const utterance = Buffer.from(command.utterance, 'base64');
  const frames: string[] = [];
  for (let at = 0; at + 160 <= utterance.length; at += 160)
    frames.push(utterance.subarray(at, at + 160).toString('base64'));
  const streams: Stream[] = [];
  const stagger = Math.min(command.cycleMs, 2000) / Math.max(1, command.calls);
  for (let i = 0; i < command.calls; i++) {
    setTimeout(() => streams.push(connect(command, i)), i * stagger);
  }
  const began = epoch();
  const tick = () => {
    const now = epoch();
    for (const s of streams) {
      if (!s.open) continue;
      // Frames due on this stream's own 20 ms grid (catching up after a late timer).
      const due = Math.floor((now - s.t0) / FRAME_MS) + 1;
      while (s.sent < due) {
        let payload = SILENT;
        const offset = s.sent * FRAME_MS;
        if (s.talkAt < 0 && offset >= s.nextTalk) {
          s.talkAt = 0;
          s.nextTalk += command.cycleMs;
        }
        if (s.talkAt >= 0) {
          payload = frames[s.talkAt++]!;
          if (s.talkAt >= frames.length) s.talkAt = -1;
        }
        // Twilio's media message, written out directly (JSON.stringify of the object costs the
        // emulator, which shares this machine's two cores with the server, several times more).
        s.socket.send(
          `{"event":"media","sequenceNumber":"${++s.seq}","media":{"track":"inbound","chunk":"${s.sent + 1}",` +
            `"timestamp":"${Math.round(epoch() - s.t0)}","payload":"${payload}"},"streamSid":"${s.sid}"}`,
        );
        s.sent++;
      }
      while (s.pendingMarks.length > 0 && s.pendingMarks[0]!.at <= now) {
        const mark = s.pendingMarks.shift()!;
        s.socket.send(
          JSON.stringify({
            event: 'mark',
            sequenceNumber: String(++s.seq),
            streamSid: s.sid,
            mark: { name: mark.name },
          }),
        );
      }
    }
    // Each call lasts durationMs from its own start: calls end staggered, as they began.
    for (const s of streams) if (s.open && now - s.t0 >= command.durationMs) stop(s);
    const over = streams.length === command.calls && streams.every((s) => !s.open && s.t0 > 0);
    if (!over && now - began < command.durationMs + 10_000) setTimeout(tick, TICK_MS);
    else finish(streams);
  };
  setTimeout(tick, TICK_MS);
}

function connect(command: StartCommand, index: number): Stream {
  // Masked with a zero key (ws then skips the XOR): the emulator's own CPU, not the server's, is
  // saved; the server unmasks every frame just the same.
  const socket = new WebSocket(command.url, { generateMask: (mask: Buffer) => mask.fill(0) });
  const s: Stream = {
    socket,
    sid: `MZbench${index}`,
    t0: 0,
    open: false,
    talkAt: -1,
    nextTalk: command.firstTalkMs,
    playedUntil: 0,
    pendingMarks: [],
    sent: 0,
    seq: 0,
    gaps: 0,
    maxGapMs: 0,
  };
  socket.on('open', () => {
    s.t0 = epoch();
    socket.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    socket.send(
      JSON.stringify({
        event: 'start',
        sequenceNumber: String(++s.seq),
        start: {
          accountSid: 'ACbench',
          streamSid: s.sid,
          callSid: `CAbench${index}`,
          tracks: ['inbound'],
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
          customParameters: { t0: String(s.t0), call: String(index) },
        },
        streamSid: s.sid,
      }),
    );
    s.open = true;
  });
  socket.on('message', (data: Buffer) => {
    const now = epoch();
    // Nearly every message is a media frame, and only its arrival matters here.
    if (data.subarray(0, MEDIA_START.length).equals(MEDIA_START)) return played(s, now);
    const message = JSON.parse(data.toString()) as { event: string; mark?: { name: string } };
    if (message.event === 'media') played(s, now);
    else if (message.event === 'mark' && message.mark)
      s.pendingMarks.push({ name: message.mark.name, at: Math.max(now, s.playedUntil) });
    else if (message.event === 'clear') {
      s.playedUntil = now;
      for (const m of s.pendingMarks) m.at = now;
    }
  });
  socket.on('close', () => (s.open = false));
  socket.on('error', () => (s.open = false));
  return s;
}

/**
 * A media frame arrived: it plays after what is buffered. Arriving after the buffer ran dry is a
 * gap the caller hears (counted from the second frame on: the first starts the audio); the bench
 * sends a background track on every call in its density steps, so audio never pauses there.
 */
function played(s: Stream, now: number): void {
  if (s.playedUntil > 0 && now > s.playedUntil) {
    const gap = now - s.playedUntil;
    if (gap > FRAME_MS) s.gaps++;
    if (gap > s.maxGapMs) s.maxGapMs = gap;
  }
  s.playedUntil = Math.max(now, s.playedUntil) + FRAME_MS;
}

function stop(s: Stream): void {
  s.socket.send(JSON.stringify({ event: 'stop', sequenceNumber: String(++s.seq), streamSid: s.sid, stop: {} }));
  s.socket.close();
  s.open = false;
}

function finish(streams: Stream[]): void {
  let sent = 0;
  let gaps = 0;
  let maxGapMs = 0;
  for (const s of streams) {
    sent += s.sent;
    gaps += s.gaps;
    maxGapMs = Math.max(maxGapMs, s.maxGapMs);
    if (s.open) stop(s);
  }
  const cpu = process.cpuUsage();
  process.send?.({
    done: true,
    sent,
    gaps,
    maxGapMs,
    loopMaxMs: loopDelay.max / 1e6,
    streams: streams.length,
    cpuMs: (cpu.user + cpu.system) / 1000,
  });
}

process.on('message', (command: StartCommand) => {
  if (command.cmd === 'start') run(command);
});
