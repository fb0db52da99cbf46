import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { concatPcm, silence, toFrames, tone } from '../../src/media/audio.js';
import { DeepgramStt, deepgramListenUrl } from '../../src/providers/stt/deepgram.js';
import { SttError, type SttEvent, type SttOptions, type SttStream } from '../../src/providers/stt/types.js';
import { FakeDeepgram } from '../../src/testing/fake-deepgram.js';

const OPTIONS: SttOptions = { language: 'en-US', keywords: [], encoding: 'mulaw', sampleRate: 8000 };

/** 20 ms mu-law frames: a voiced stretch (a 300 Hz tone standing in for speech), then silence. */
function utterance(voicedMs: number, silentMs: number): Buffer[] {
  return toFrames(concatPcm([tone([300], voicedMs, 6000), silence(silentMs)]));
}

/** Records a stream's events and waits for the one a test expects. */
class Events {
  readonly all: SttEvent[] = [];
  private waiters: (() => void)[] = [];
  constructor(stream: SttStream) {
    stream.on((event) => {
      this.all.push(event);
      for (const wake of this.waiters.splice(0)) wake();
    });
  }
  async until(predicate: (events: SttEvent[]) => boolean, what: string, timeoutMs = 3000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.all)) {
      const left = deadline - Date.now();
      assert.ok(left > 0, `timed out waiting for ${what}; got ${JSON.stringify(this.all)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
  of<T extends SttEvent['type']>(type: T): Extract<SttEvent, { type: T }>[] {
    return this.all.filter((e): e is Extract<SttEvent, { type: T }> => e.type === type);
  }
}

const ended = (events: SttEvent[]): boolean => events.some((e) => e.type === 'final' && e.endOfUtterance);

describe('Deepgram live transcription against its fake', () => {
  let fake: FakeDeepgram;
  let stt: DeepgramStt;
  const open: SttStream[] = [];
  before(async () => {
    fake = await FakeDeepgram.start();
    stt = new DeepgramStt({ apiKey: fake.apiKey, baseUrl: fake.url, endpointingMs: 200 });
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
    fake.latencyMs = 0;
  });
  after(() => fake.close());

  async function start(
    options: Partial<SttOptions> = {},
    provider = stt,
  ): Promise<{ stream: SttStream; events: Events }> {
    const stream = await provider.open({ ...OPTIONS, ...options });
    open.push(stream);
    return { stream, events: new Events(stream) };
  }

  it('sends the telephone format, language, model, endpointing and boosted keywords in the query', async () => {
    await start({ language: 'en-GB', keywords: ['Openline', 'Acme:5', 'Zyx:1.5', ' '] });
    const c = fake.connections.at(-1)!;
    assert.equal(c.authorization, `Token ${fake.apiKey}`);
    const q = c.query;
    assert.equal(q.get('encoding'), 'mulaw');
    assert.equal(q.get('sample_rate'), '8000');
    assert.equal(q.get('channels'), '1');
    assert.equal(q.get('interim_results'), 'true');
    assert.equal(q.get('punctuate'), 'true');
    assert.equal(q.get('endpointing'), '200');
    assert.equal(q.get('language'), 'en-GB');
    assert.equal(q.get('model'), 'nova-2-phonecall');
    assert.deepEqual(q.getAll('keywords'), ['Openline:2', 'Acme:5', 'Zyx:1.5']);
  });

  it('a stream may set its own endpointing', async () => {
    await start({ endpointingMs: 700 });
    assert.equal(fake.connections.at(-1)!.query.get('endpointing'), '700');
  });

  it('turns interim results into growing partials and the endpointed result into a final that ends the utterance', async () => {
    fake.script('I would like to book a table');
    const { stream, events } = await start();
    for (const frame of utterance(1600, 400)) stream.write(frame);
    await events.until(ended, 'the final');
    const partials = events.of('partial').map((e) => e.text);
    assert.ok(partials.length >= 3, JSON.stringify(partials));
    assert.equal(partials[0], 'I');
    for (let i = 1; i < partials.length; i++) assert.ok(partials[i]!.startsWith(partials[i - 1]!));
    assert.deepEqual(events.of('final'), [
      { type: 'final', text: 'I would like to book a table', endOfUtterance: true },
    ]);
    // Partials come before the final.
    assert.equal(events.all.at(-1)!.type, 'final');
  });

  it('each voiced stretch gets its own utterance', async () => {
    fake.script('Hello?', 'Yes, speaking.');
    const { stream, events } = await start();
    for (const frame of [...utterance(400, 400), ...utterance(600, 400)]) stream.write(frame);
    await events.until((e) => e.filter((x) => x.type === 'final').length === 2, 'two finals');
    assert.deepEqual(
      events.of('final').map((e) => [e.text, e.endOfUtterance]),
      [
        ['Hello?', true],
        ['Yes, speaking.', true],
      ],
    );
  });

  it('long speech settled in pieces: finals that do not end the utterance, partials that do not repeat them', async () => {
    const long = await FakeDeepgram.start({ finalAfterMs: 600, transcripts: ['one two three four five six seven'] });
    try {
      const provider = new DeepgramStt({ apiKey: long.apiKey, baseUrl: long.url, endpointingMs: 200 });
      const { stream, events } = await start({}, provider);
      for (const frame of utterance(1500, 400)) stream.write(frame);
      await events.until(ended, 'the end of the utterance');
      const finals = events.of('final');
      assert.ok(finals.length >= 2, JSON.stringify(finals));
      assert.ok(finals.slice(0, -1).every((f) => !f.endOfUtterance));
      assert.equal(finals.at(-1)!.endOfUtterance, true);
      assert.equal(
        finals
          .map((f) => f.text)
          .filter(Boolean)
          .join(' '),
        'one two three four five six seven',
      );
      // A partial after a final carries only the words after it, as Deepgram's interim results do.
      const afterFirstFinal = events.all.slice(events.all.indexOf(finals[0]!) + 1).find((e) => e.type === 'partial');
      assert.ok(afterFirstFinal && afterFirstFinal.type === 'partial');
      const next = 'one two three four five six seven'.split(' ')[finals[0]!.text.split(' ').length];
      assert.equal(afterFirstFinal.text, next);
    } finally {
      await Promise.all(open.splice(0).map((s) => s.close()));
      await long.close();
    }
  });

  it('with wordsAsHeard, a short voice is given only the words it lasted for', async () => {
    const heard = await FakeDeepgram.start({ wordsAsHeard: true, transcripts: ['one two three four five six seven'] });
    try {
      const provider = new DeepgramStt({ apiKey: heard.apiKey, baseUrl: heard.url, endpointingMs: 200 });
      const { stream, events } = await start({}, provider);
      for (const frame of utterance(400, 400)) stream.write(frame);
      await events.until(ended, 'the end of the utterance');
      assert.deepEqual(
        events.of('final').map((f) => f.text),
        ['one two'],
      );
    } finally {
      await Promise.all(open.splice(0).map((s) => s.close()));
      await heard.close();
    }
  });

  it('finalize() sends Finalize and its answer ends the utterance at once', async () => {
    fake.script('Press one please');
    const { stream, events } = await start();
    // Voice without the endpointing silence: only Finalize can settle it.
    for (const frame of utterance(800, 0)) stream.write(frame);
    await events.until((e) => e.some((x) => x.type === 'partial'), 'a partial');
    stream.finalize();
    await events.until(ended, 'the finalized result');
    assert.deepEqual(events.of('final'), [{ type: 'final', text: 'Press one please', endOfUtterance: true }]);
    assert.deepEqual(fake.connections.at(-1)!.controls, ['Finalize']);
    const answer = fake.connections.at(-1)!.sent.at(-1)!;
    assert.equal(answer.from_finalize, true);
  });

  it('finalize() in a pause: the voice that follows goes on with the same utterance, not the next transcript', async () => {
    fake.script('I would like to book a table', 'For two people');
    const { stream, events } = await start();
    for (const frame of utterance(600, 100)) stream.write(frame);
    stream.finalize();
    await events.until(ended, 'the finalized result');
    for (const frame of utterance(400, 400)) stream.write(frame);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(
      events.of('final').filter((f) => f.text !== ''),
      [{ type: 'final', text: 'I would like to book a table', endOfUtterance: true }],
    );
    // The next voiced stretch after the utterance ended is the next utterance.
    for (const frame of utterance(400, 400)) stream.write(frame);
    await events.until((e) => e.some((x) => x.type === 'final' && x.text === 'For two people'), 'the next utterance');
  });

  it('finalize() with nothing heard answers with an empty final, so the leg need not wait', async () => {
    const { stream, events } = await start();
    for (const frame of utterance(0, 200)) stream.write(frame);
    stream.finalize();
    await events.until(ended, 'the answer to Finalize');
    assert.deepEqual(events.all, [{ type: 'final', text: '', endOfUtterance: true }]);
  });

  it('results still arrive in order when the server is slow', async () => {
    fake.latencyMs = 150;
    fake.script('Slow line today');
    const { stream, events } = await start();
    for (const frame of utterance(700, 400)) stream.write(frame);
    await events.until(ended, 'the final');
    assert.equal(events.all.at(-1)!.type, 'final');
    assert.ok(events.of('partial').length >= 1);
  });

  it('close() sends CloseStream, gets the last results and closes without an error', async () => {
    fake.script('Goodbye now');
    const { stream, events } = await start();
    for (const frame of utterance(500, 0)) stream.write(frame);
    await events.until((e) => e.some((x) => x.type === 'partial'), 'a partial');
    await stream.close();
    const c = fake.connections.at(-1)!;
    assert.deepEqual(c.controls, ['CloseStream']);
    for (let i = 0; i < 100 && !c.closed; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(c.closed, { code: 1000, by: 'server' });
    assert.deepEqual(
      events.of('final').map((e) => e.text),
      ['Goodbye now'],
    );
    assert.deepEqual(events.of('error'), []);
    assert.equal(c.bytes, 500 * 8);
  });

  it('a wrong key is refused with a clear error that names the variable, not the key', async () => {
    const bad = new DeepgramStt({ apiKey: 'dg-wrong-secret', baseUrl: fake.url });
    await assert.rejects(bad.open(OPTIONS), (error) => {
      assert.ok(error instanceof SttError);
      assert.equal(error.status, 401);
      assert.equal(error.retryable, false);
      assert.match(error.message, /Deepgram refused the stream with 401 \(check DEEPGRAM_API_KEY\): INVALID_AUTH/);
      assert.doesNotMatch(error.message, /dg-wrong-secret/);
      return true;
    });
    assert.equal(fake.refusals.at(-1)!.authorization, 'Token dg-wrong-secret');
  });

  it('a refusal for now (429 over the concurrency limit) is retryable and keeps its Retry-After', async () => {
    fake.refuseNext({ status: 429, retryAfterS: 1 });
    await assert.rejects(stt.open(OPTIONS), (error) => {
      assert.ok(error instanceof SttError);
      assert.equal(error.status, 429);
      assert.equal(error.retryable, true);
      assert.equal(error.retryAfterMs, 1000);
      assert.match(error.message, /TOO_MANY_REQUESTS/);
      return true;
    });
  });

  it('an unreachable server rejects open() as retryable', async () => {
    const gone = await FakeDeepgram.start();
    await gone.close();
    await assert.rejects(new DeepgramStt({ apiKey: 'k', baseUrl: gone.url }).open(OPTIONS), (error) => {
      assert.ok(error instanceof SttError);
      assert.equal(error.retryable, true);
      assert.match(error.message, /Cannot reach Deepgram/);
      return true;
    });
  });

  it('keeps the audio no final has covered yet, for a stream that replaces a broken one', async () => {
    fake.script('first words', 'second words');
    const { stream, events } = await start();
    for (const frame of utterance(400, 400)) stream.write(frame);
    await events.until(ended, 'the first final');
    // The final covered the voice and the endpointing silence after it (200 ms); the rest is kept.
    const kept = stream.unsettled!();
    assert.equal(kept.length, 10, 'the last 200 ms of silence');
    const voiced = utterance(300, 0);
    for (const frame of voiced) stream.write(frame);
    await events.until((e) => e.some((x) => x.type === 'partial' && x.text === 'second'), 'the next partial');
    const next = stream.unsettled!();
    assert.deepEqual(next.slice(-voiced.length), voiced, 'the voice under way is kept, frame for frame');
    fake.dropAll(1011, 'NET-0000');
    await events.until((e) => e.some((x) => x.type === 'error'), 'an error');
    const late = utterance(40, 0);
    for (const frame of late) stream.write(frame);
    assert.deepEqual(stream.unsettled!().slice(-late.length), late, 'audio written as the socket went is kept too');
  });

  it('a stream the server drops reports one error event', async () => {
    const { events } = await start();
    fake.dropAll(1011, 'NET-0000');
    await events.until((e) => e.some((x) => x.type === 'error'), 'an error');
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(events.of('error'), [{ type: 'error', message: 'Deepgram closed the stream (1011 NET-0000)' }]);
  });
});

describe('Deepgram KeepAlive', () => {
  it('an idle stream stays open with KeepAlive, and closes without it', async () => {
    const fake = await FakeDeepgram.start({ idleTimeoutMs: 300 });
    try {
      const kept = await new DeepgramStt({ apiKey: fake.apiKey, baseUrl: fake.url, keepAliveMs: 60 }).open(OPTIONS);
      const keptEvents = new Events(kept);
      const dropped = await new DeepgramStt({ apiKey: fake.apiKey, baseUrl: fake.url, keepAliveMs: 60_000 }).open(
        OPTIONS,
      );
      const droppedEvents = new Events(dropped);
      await droppedEvents.until((e) => e.some((x) => x.type === 'error'), 'the idle close', 3000);
      assert.match(droppedEvents.of('error')[0]!.message, /1011 NET-0001/);
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(keptEvents.all, []);
      const controls = fake.connections[0]!.controls;
      assert.ok(controls.length >= 3 && controls.every((c) => c === 'KeepAlive'), JSON.stringify(controls));
      await kept.close();
      await dropped.close();
    } finally {
      await fake.close();
    }
  });
});

describe('Deepgram listen URL', () => {
  const cases: {
    name: string;
    base: string;
    model: string;
    options: Partial<SttOptions>;
    check: (url: URL) => void;
  }[] = [
    {
      name: 'an https base becomes wss, and a trailing /v1 is not doubled',
      base: 'https://dg.example.com/v1/',
      model: 'nova-2-phonecall',
      options: {},
      check: (url) => assert.equal(`${url.origin}${url.pathname}`, 'wss://dg.example.com/v1/listen'),
    },
    {
      name: 'a non-English call leaves the English-only phonecall model for the general one',
      base: 'wss://api.deepgram.com',
      model: 'nova-2-phonecall',
      options: { language: 'es' },
      check: (url) => {
        assert.equal(url.searchParams.get('model'), 'nova-2');
        assert.equal(url.searchParams.get('language'), 'es');
      },
    },
    {
      name: 'nova-3 takes key terms without boosts',
      base: 'wss://api.deepgram.com',
      model: 'nova-3',
      options: { keywords: ['Openline:4', 'Acme'] },
      check: (url) => {
        assert.deepEqual(url.searchParams.getAll('keyterm'), ['Openline', 'Acme']);
        assert.deepEqual(url.searchParams.getAll('keywords'), []);
      },
    },
  ];
  for (const c of cases) {
    it(c.name, () => c.check(deepgramListenUrl(c.base, c.model, 300, { ...OPTIONS, ...c.options })));
  }
});
