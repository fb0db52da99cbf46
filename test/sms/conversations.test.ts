import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ScaledClock } from '../../src/clock.js';
import { waitFor } from '../../src/testing/wait.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';
import { startReceiver } from '../outbound/receiver.js';

type Json = Record<string, unknown>;
interface Conversation extends Json {
  id: string;
  is_active: boolean;
  messages?: { sender: string; message: string }[];
}

/**
 * AI conversations over SMS on the sandbox: a number with an objective answers texts (the offline
 * model here), one conversation per person, in the hosted API's shapes.
 */
for (const storage of ['sqlite', 'postgres'] as const)
  describe(`SMS conversations (${storage})`, () => {
    let t: TestApp;
    let number: string;
    const person = '+14155550100';

    const text = async (body: string, from = person) => {
      const r = await t.request('POST', '/v1/sandbox/sms', { from, to: number, body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    };
    const conversations = async (): Promise<Conversation[]> =>
      (await t.request('GET', `/v1/sms/conversations?phone_number=${encodeURIComponent(number)}`)).body
        .data as Conversation[];
    const conversation = async (id: string): Promise<Conversation> =>
      (await t.request('GET', `/v1/sms/conversations/${id}`)).body.data as Conversation;
    /** The conversation once it holds `n` messages. */
    const withMessages = (id: string, n: number) =>
      waitFor(`${n} messages`, async () => {
        const c = await conversation(id);
        return (c.messages?.length ?? 0) >= n ? c : undefined;
      });

    before(async () => {
      t = await createTestApp({ clock: new ScaledClock(50), postgres: storage === 'postgres' });
      await t.services.startWorkers();
      const bought = await t.request('POST', '/v1/inbound/purchase', { prompt: 'Answer calls' });
      number = String(bought.body.phone_number);
    });
    after(() => t.close());

    it('a number without SMS agent settings only stores texts', async () => {
      await text('Hello?');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(await conversations(), []);
    });

    it('sets the agent of a number and lists it', async () => {
      const r = await t.request('POST', '/v1/sms/number/update', {
        phone_number: number,
        objective: 'You take pizza orders for Luigi’s by text.',
        request_data: [{ shop: 'Luigi’s' }],
        time_out: 60,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const data = r.body.data as { message: string; sms_config: Json };
      assert.equal(data.message, `SMS config updated for number ${number}`);
      assert.equal(data.sms_config.objective, 'You take pizza orders for Luigi’s by text.');
      assert.deepEqual(data.sms_config.request_data, { shop: 'Luigi’s' });
      assert.equal(r.body.errors, null);
      const numbers = (await t.request('GET', '/v1/sms/numbers')).body.data as Json[];
      assert.deepEqual(
        numbers.map((n) => [n.phone_number, n.conversation_count]),
        [[number, 0]],
      );
    });

    it('answers each text in the person’s conversation, which goes on until it is closed', async () => {
      await text('Hi, I would like to order a pizza');
      const [first] = await waitFor('a conversation', async () => {
        const list = await conversations();
        return list.length ? list : undefined;
      });
      assert.equal(first!.is_active, true);
      assert.equal(first!.user_number, person);
      assert.equal(first!.agent_number, number);
      const answered = await withMessages(first!.id, 2);
      assert.deepEqual(
        answered.messages!.map((m) => m.sender),
        ['USER', 'AGENT'],
      );
      assert.equal(answered.messages![0]!.message, 'Hi, I would like to order a pizza');
      assert.ok(answered.messages![1]!.message.length > 0);

      // The reply went out from the number, as any text it sends.
      const sent = (
        await t.request('GET', `/v1/sms/messages?direction=outbound&phone_number=${encodeURIComponent(number)}`)
      ).body;
      assert.ok(JSON.stringify(sent).includes(answered.messages![1]!.message));

      await text('A large margherita please');
      const again = await withMessages(first!.id, 4);
      assert.deepEqual(
        again.messages!.map((m) => m.sender),
        ['USER', 'AGENT', 'USER', 'AGENT'],
      );
      assert.equal((await conversations()).length, 1, 'the same conversation');

      // A person at the business takes over on the conversation.
      const posted = await t.request('POST', `/v1/sms/conversations/${first!.id}/messages`, {
        message: 'This is Luigi, your pizza is in the oven.',
      });
      assert.equal(posted.status, 200, JSON.stringify(posted.body));
      const taken = await conversation(first!.id);
      assert.equal(taken.messages!.at(-1)!.message, 'This is Luigi, your pizza is in the oven.');
      assert.equal(taken.messages!.at(-1)!.sender, 'AGENT');

      // Closed: the agent stops; the next text opens a new conversation.
      const closed = await t.request('PATCH', `/v1/sms/conversations/${first!.id}`, { is_active: false });
      assert.equal(closed.status, 200);
      assert.deepEqual((closed.body.conversation as Json).is_active, false);
      await text('Thanks!');
      const both = await waitFor('a second conversation', async () => {
        const list = await conversations();
        return list.length === 2 ? list : undefined;
      });
      const second = both.find((c) => c.id !== first!.id)!;
      assert.equal(second.is_active, true);
      await withMessages(second.id, 2);
      const numbers = (await t.request('GET', '/v1/sms/numbers')).body.data as Json[];
      assert.equal(numbers[0]!.conversation_count, 2);
    });

    it('keeps every account to its own numbers and conversations', async () => {
      const [one] = await conversations();
      assert.equal(
        (await t.request('GET', `/v1/sms/conversations/${one!.id}`, undefined, { as: t.otherKey })).status,
        404,
      );
      assert.equal(
        (await t.request('PATCH', `/v1/sms/conversations/${one!.id}`, { is_active: false }, { as: t.otherKey })).status,
        404,
      );
      const foreign = await t.request(
        'POST',
        '/v1/sms/number/update',
        { phone_number: number, objective: 'Mine now' },
        { as: t.otherKey },
      );
      assert.equal(foreign.status, 404);
      const bad = await t.request('POST', '/v1/sms/number/update', { phone_number: number, webhook: 'not a url' });
      assert.equal(bad.status, 400);
      assert.match(JSON.stringify(bad.body), /webhook/);
    });

    it('POSTs every reply with the conversation’s history to the number’s SMS webhook', async () => {
      const receiver = await startReceiver();
      try {
        receiver.handle = (_req, res) => res.end('ok');
        const r = await t.request('POST', '/v1/sms/number/update', {
          phone_number: number,
          webhook: `${receiver.url}/sms`,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        await text('Do you deliver?', '+14155550102');
        const got = await waitFor('the webhook', async () => {
          const bodies = receiver.received.map((x) => JSON.parse(x.body) as Json);
          return bodies.find((b) => b.event === 'sms.reply');
        });
        assert.equal(got.user_number, '+14155550102');
        assert.equal(got.agent_number, number);
        const messages = got.messages as { sender: string; message: string }[];
        assert.deepEqual(
          messages.map((m) => m.sender),
          ['USER', 'AGENT'],
        );
        assert.equal(messages[0]!.message, 'Do you deliver?');
        assert.equal(got.message, messages[1]!.message);
      } finally {
        await receiver.close();
      }
    });

    it('lists in pages with the hosted sorting, filters and pagination', async () => {
      const bought = await t.request('POST', '/v1/inbound/purchase', { prompt: 'Answer calls' });
      const ours = String(bought.body.phone_number);
      await t.request('POST', '/v1/sms/number/update', {
        phone_number: ours,
        objective: 'You book table reservations.',
      });
      const people = ['+14155550111', '+14155550112', '+14155550113'];
      for (const person of people) {
        const r = await t.request('POST', '/v1/sandbox/sms', { from: person, to: ours, body: 'A table for two?' });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      const list = async (query: string) => {
        const r = await t.request('GET', `/v1/sms/conversations?phone_number=${encodeURIComponent(ours)}&${query}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body as { data: (Conversation & { user_number: string; message_count: number })[]; extra: Json };
      };
      // Each person's text answered: two messages in each conversation.
      await waitFor('three answered conversations', async () => {
        const { data } = await list('pageSize=10');
        return data.length === 3 && data.every((c) => c.message_count >= 2) ? data : undefined;
      });
      const first = await list('pageSize=2&page=1&sortBy=created_at&sortDir=asc');
      const second = await list('pageSize=2&page=2&sortBy=created_at&sortDir=asc');
      assert.deepEqual(first.extra, { pagination: { totalItems: 3, totalPages: 2, currentPage: 1, pageSize: 2 } });
      assert.equal(second.data.length, 1);
      const pages = [...first.data, ...second.data];
      assert.deepEqual(pages.map((c) => c.user_number).sort(), people);
      const times = pages.map((c) => String(c.created_at));
      assert.deepEqual(times, [...times].sort());
      const newest = await list('sortBy=user_number&sortDir=desc');
      assert.equal(newest.data[0]!.user_number, people[2]);
      const filter = (f: unknown) => list(`filters=${encodeURIComponent(JSON.stringify(f))}`);
      const one = await filter([{ field: 'user_number', operator: 'eq', value: people[1] }]);
      assert.deepEqual(
        one.data.map((c) => c.user_number),
        [people[1]],
      );
      assert.equal((one.extra.pagination as Json).totalItems, 1);
      assert.equal((await filter([{ field: 'user_number', operator: 'endsWith', value: '0113' }])).data.length, 1);
      assert.equal((await filter([{ field: 'is_active', operator: 'eq', value: true }])).data.length, 3);
      assert.equal((await filter([{ field: 'message_count', operator: 'gte', value: 2 }])).data.length, 3);
      assert.equal((await filter([{ field: 'created_at', operator: 'gt', value: '2999-01-01' }])).data.length, 0);
      // Problems name the parameter, and each filter by its position.
      const bad = await t.request(
        'GET',
        `/v1/sms/conversations?filters=${encodeURIComponent(
          JSON.stringify([
            { field: 'user_number', operator: 'eq', value: people[0] },
            { field: 'variables', operator: 'like', value: 1 },
          ]),
        )}`,
      );
      assert.equal(bad.status, 400);
      const errors = (bad.body.errors as string[]).map((e) => e.split(' ')[0]);
      assert.deepEqual(errors, ['filters[1].field', 'filters[1].operator']);
      assert.equal((await t.request('GET', '/v1/sms/conversations?filters=nope')).status, 400);
      assert.equal((await t.request('GET', '/v1/sms/conversations?sortBy=nope')).status, 400);
      // Another account sees none of them.
      const foreign = await t.request('GET', '/v1/sms/conversations', undefined, { as: t.otherKey });
      assert.deepEqual(foreign.body.data, []);
    });

    it('runs the custom tools of a number’s agent, as a call does, and texts what came back', async () => {
      const api = await startReceiver((_req, res) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ order: { status: 'out for delivery' }, ok: true }));
      });
      try {
        const bought = await t.request('POST', '/v1/inbound/purchase', { prompt: 'Answer calls' });
        const shop = String(bought.body.phone_number);
        const unknown = await t.request('POST', '/v1/sms/number/update', { phone_number: shop, tools: ['TL-nope'] });
        assert.equal(unknown.status, 400);
        assert.match(JSON.stringify(unknown.body.errors), /tools/);
        const set = await t.request('POST', '/v1/sms/number/update', {
          phone_number: shop,
          objective: 'Answer order questions with Order Status, then tell the courier with Notify Courier.',
          request_data: { order_id: 'A-7' },
          tools: [
            {
              name: 'Order Status',
              description: 'Looks up an order',
              url: `${api.url}/orders/{{order_id}}`,
              method: 'GET',
              response: { status: '$.order.status' },
            },
            {
              name: 'Notify Courier',
              description: 'Tells the courier the order status',
              url: `${api.url}/courier/{{order_id}}?status={{status}}`,
              method: 'GET',
              response: { ok: '$.ok' },
            },
          ],
        });
        assert.equal(set.status, 200, JSON.stringify(set.body));
        const send = async (body: string) =>
          assert.equal((await t.request('POST', '/v1/sandbox/sms', { from: person, to: shop, body })).status, 200);
        await send('Hi there');
        const list = async () =>
          (await t.request('GET', `/v1/sms/conversations?phone_number=${encodeURIComponent(shop)}`)).body
            .data as Conversation[];
        const [talk] = await waitFor('a conversation', async () => ((await list()).length ? list() : undefined));
        await withMessages(talk!.id, 2);
        await send('Where is my order?');
        const done = await withMessages(talk!.id, 4);
        assert.match(done.messages!.at(-1)!.message, /out for delivery/);
        // The next text's agent knows the tool ran and what it set: it goes on to the next tool.
        await send('Great, please let the courier know.');
        await withMessages(talk!.id, 6);
        assert.deepEqual(
          api.received.map((r) => [r.method, r.url]),
          [
            ['GET', '/orders/A-7'],
            ['GET', '/courier/A-7?status=out%20for%20delivery'],
          ],
        );
      } finally {
        await api.close();
      }
    });
  });
