/**
 * The interruption benchmark on an echoing line (`npm run bench:interruptions -- --echo`): the
 * whole server on loopback in the sandbox's audio mode, calling persona 555-0113, whose line
 * returns the agent's own voice 10 dB quieter and 150 ms late under everything (the issue's echo
 * case), with the server's own VAD, recogniser and voices. Each call lasts two minutes
 * (`max_duration`): the agent waits for the persona's "Hello?", then reads a schedule a day at a
 * time, one reply per turn from an emulated language model (the OpenAI protocol,
 * src/testing/fake-openai.ts), and the persona answers each briefly; the calls run side by side.
 *
 * Per call, from its record (`latency.interruptions`): the agent's voice taken for echo, the
 * pauses in its voice for a voice over it (`held` less `reply_holds`), those set off by echo that
 * got past the guard (`echo_holds`), the replies held before any of them was heard (`reply_holds`:
 * the persona went on after a pause), and cuts (the agent's turn ended by a voice over it). The
 * persona never talks over the agent, so every cut and every pause is a self-interruption.
 * Options: --calls=N (default 3).
 */
import { ScaledClock } from '../../src/clock.js';
import { createTestApp, waitForCall } from '../../src/testing/harness.js';
import { FakeOpenAi, fakeLlmConfig } from '../../src/testing/fake-openai.js';

const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

interface EchoFigures {
  echo_ms: number;
  held: number;
  echo_holds: number;
  reply_holds: number;
  cut: number;
  silent_ms_max: number | null;
}

/** The schedule read one day per turn, round the week again, for as long as the call lasts. */
function scheduleReply(turn: number): string {
  const day = DAYS[turn % DAYS.length]!;
  return (
    `On ${day} the driver comes between nine and eleven in the morning and again between two and four ` +
    `in the afternoon, and if nobody is home the parcel goes to the neighbour at number twelve. Shall I go on?`
  );
}

export async function runEcho(calls: number): Promise<void> {
  const model = await FakeOpenAi.start();
  model.handler = (request) => ({
    text: scheduleReply(request.body.messages.filter((m) => m.role === 'assistant').length),
  });
  const t = await createTestApp({
    clock: new ScaledClock(1),
    env: { OPENLINE_SANDBOX_AUDIO: '1' },
    config: { llm: fakeLlmConfig(model, 10_000) },
  });
  await t.services.startWorkers();
  const started = await Promise.all(
    Array.from({ length: calls }, () =>
      t.request('POST', '/v1/calls', {
        phone_number: '+14155550113',
        task: 'Read the customer the new delivery schedule, one day at a time.',
        wait_for_greeting: true,
        first_sentence:
          'Hello, this is Openline calling about your deliveries, and I would like to walk you through the ' +
          'new schedule for the coming weeks, one day at a time, so that nothing comes as a surprise.',
        max_duration: 2,
      }),
    ),
  );
  const rows: (EchoFigures & { spoken: number; minutes: number })[] = [];
  for (const r of started) {
    if (r.status !== 200) throw new Error(`placing a call: ${JSON.stringify(r.body)}`);
    const call = await waitForCall(t, String(r.body.call_id), t.key, 200_000);
    const figures = (call.latency as { interruptions: EchoFigures }).interruptions;
    const turns = call.transcripts as { user: string }[];
    rows.push({
      ...figures,
      spoken: turns.filter((x) => x.user === 'assistant').length,
      minutes: Number(call.call_length),
    });
  }
  await t.close();
  await model.close();
  console.log(
    `\nInterruptions on an echoing line (sandbox 555-0113: the agent's voice back at -10 dB, 150 ms late): ` +
      `${calls} calls of up to 2 minutes side by side\n`,
  );
  console.log(
    '| call | minutes | agent utterances | echo ignored | pauses in its voice (by echo past the guard) | longest pause | replies held unheard | cuts (self-interruptions) |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  rows.forEach((r, i) =>
    console.log(
      `| ${i + 1} | ${r.minutes.toFixed(2)} | ${r.spoken} | ${(r.echo_ms / 1000).toFixed(1)} s | ${r.held - r.reply_holds} (${r.echo_holds}) | ${
        r.held === r.reply_holds || r.silent_ms_max === null ? '-' : `${r.silent_ms_max} ms`
      } | ${r.reply_holds} | ${r.cut} |`,
    ),
  );
}
