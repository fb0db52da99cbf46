import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../api';
import { Field, Loading, Problem, time, useTitle } from '../components/ui';

interface Message {
  message_id: string;
  from: string;
  to: string;
  body: string;
  received_at: string;
}
type Directed = Message & { direction: 'inbound' | 'outbound' };

/** Received and sent messages, newest first. */
async function allMessages(): Promise<Directed[]> {
  const read = async (direction: Directed['direction']) =>
    (await api<{ messages: Message[] }>(`/v1/sms/messages?direction=${direction}&limit=500`)).messages.map(
      (m): Directed => ({ ...m, direction }),
    );
  const [inbound, outbound] = await Promise.all([read('inbound'), read('outbound')]);
  return [...inbound, ...outbound].sort((a, b) => b.received_at.localeCompare(a.received_at));
}

/** SMS: conversations by the other party's number, and sending a text from one of your numbers. */
export function SmsPage() {
  useTitle('SMS');
  const queries = useQueryClient();
  const messages = useQuery({
    queryKey: ['sms'],
    queryFn: allMessages,
    refetchInterval: 5_000,
  });
  const [form, setForm] = useState({ from: '', to: '', message: '' });
  const send = useMutation({
    mutationFn: () =>
      api('/v1/sms/send', {
        method: 'POST',
        body: { ...(form.from && { from: form.from }), phone_number: form.to, message: form.message },
      }),
    onSuccess: () => {
      setForm({ ...form, message: '' });
      void queries.invalidateQueries({ queryKey: ['sms'] });
    },
  });
  const conversations = new Map<string, Directed[]>();
  for (const m of messages.data ?? []) {
    const other = m.direction === 'inbound' ? m.from : m.to;
    conversations.set(other, [...(conversations.get(other) ?? []), m]);
  }
  const set = (name: keyof typeof form) => (e: { target: { value: string } }) =>
    setForm({ ...form, [name]: e.target.value });
  return (
    <section>
      <h1>SMS</h1>
      <form
        className="editor"
        onSubmit={(e) => {
          e.preventDefault();
          send.mutate();
        }}
      >
        <h2>Send a text</h2>
        <div className="grid">
          <Field label="From" hint="One of your numbers; empty: the default">
            <input value={form.from} onChange={set('from')} />
          </Field>
          <Field label="To">
            <input required value={form.to} onChange={set('to')} />
          </Field>
          <Field label="Message">
            <textarea required rows={2} value={form.message} onChange={set('message')} />
          </Field>
        </div>
        <Problem error={send.error} />
        <button type="submit" disabled={send.isPending}>
          Send text
        </button>
      </form>
      <Problem error={messages.error} />
      {messages.isPending ? (
        <Loading what="messages" />
      ) : conversations.size === 0 ? (
        <p className="empty">No messages yet.</p>
      ) : (
        [...conversations].map(([other, list]) => (
          <article key={other} className="panel">
            <h2>{other}</h2>
            <ol className="timeline">
              {[...list].reverse().map((m) => (
                <li key={m.message_id} className={`line line-${m.direction === 'inbound' ? 'user' : 'assistant'}`}>
                  <time dateTime={m.received_at}>{time(m.received_at)}</time>
                  <span className="who">{m.direction === 'inbound' ? 'Them' : 'You'}</span>
                  <span className="said">{m.body}</span>
                </li>
              ))}
            </ol>
          </article>
        ))
      )}
    </section>
  );
}
