import { useState } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, type KnowledgeBase } from '../api';
import { Field, ListTable, Problem, time, useTitle } from '../components/ui';
import { ToolTabs } from '../layout';

const KEY = ['knowledge'];
const GAPS = ['knowledge-gaps'];

/** A question a caller asked that the call's knowledge bases had nothing on (GET /v1/knowledge/gaps). */
interface Gap {
  id: string;
  call_id: string;
  knowledge_base_ids: string[];
  question: string;
  created_at: string;
}

interface Answer {
  answer: string;
  found: boolean;
  sources: { knowledge_base: string; text: string }[];
}

/** Asks one knowledge base a question, as an agent on a call would look it up. */
function AskPanel({ kb, onClose }: { kb: KnowledgeBase; onClose(): void }) {
  const [question, setQuestion] = useState('');
  const ask = useMutation({
    mutationFn: async () =>
      (
        await api<{ data: Answer }>('/v1/knowledge/answer', {
          method: 'POST',
          body: { knowledge_base_id: kb.id, question },
        })
      ).data,
  });
  return (
    <form
      className="editor"
      onSubmit={(e) => {
        e.preventDefault();
        ask.mutate();
      }}
    >
      <h2>Ask {kb.name}</h2>
      <Field label="Question" hint="What a caller might ask: the answer is what an agent would say from it">
        <input value={question} onChange={(e) => setQuestion(e.target.value)} required maxLength={2000} />
      </Field>
      <Problem error={ask.error} />
      {ask.data && (
        <div className="answer" aria-live="polite">
          <p>
            <strong>Answer:</strong> {ask.data.answer}
          </p>
          {ask.data.sources.length > 0 && (
            <details>
              <summary>From {ask.data.sources.length === 1 ? 'this passage' : 'these passages'}</summary>
              <ul>
                {ask.data.sources.map((p) => (
                  <li key={p.text}>{p.text}</li>
                ))}
              </ul>
            </details>
          )}
        </div>
      )}
      <div className="actions">
        <button type="submit" disabled={ask.isPending}>
          {ask.isPending ? 'Asking…' : 'Ask'}
        </button>
        <button type="button" className="secondary" onClick={onClose}>
          Close
        </button>
      </div>
    </form>
  );
}

/**
 * Questions callers asked that their call's knowledge bases had nothing on: answered here, the
 * question and its answer are added to those knowledge bases, so agents answer it from then on.
 */
function Gaps({ names, onAnswered }: { names: Map<string, string>; onAnswered(): void }) {
  const queries = useQueryClient();
  const gaps = useQuery({
    queryKey: GAPS,
    queryFn: async () => (await api<{ data: { gaps: Gap[] } }>('/v1/knowledge/gaps?status=open&limit=50')).data.gaps,
  });
  const [answers, setAnswers] = useState<Record<string, string>>({});
  const done = () => {
    void queries.invalidateQueries({ queryKey: GAPS });
    onAnswered();
  };
  const resolve = useMutation({
    mutationFn: (gap: Gap) =>
      api(`/v1/knowledge/gaps/${gap.id}/resolve`, { method: 'POST', body: { answer: answers[gap.id] ?? '' } }),
    onSuccess: done,
  });
  const dismiss = useMutation({
    mutationFn: (gap: Gap) => api(`/v1/knowledge/gaps/${gap.id}/dismiss`, { method: 'POST' }),
    onSuccess: done,
  });
  return (
    <>
      <h2>Questions without answers</h2>
      <p className="muted">
        Callers asked these, and their call&apos;s knowledge bases had nothing on them. An answer given here is added to
        those knowledge bases.
      </p>
      <Problem error={gaps.error ?? resolve.error ?? dismiss.error} />
      <ListTable
        rows={gaps.data}
        pending={gaps.isPending}
        what="questions"
        empty="No unanswered questions."
        rowKey={(gap) => gap.id}
        columns={[
          { header: 'Question', className: 'text', cell: (gap) => gap.question },
          {
            header: 'Knowledge bases',
            cell: (gap) => gap.knowledge_base_ids.map((id) => names.get(id) ?? id).join(', '),
          },
          {
            header: 'Asked',
            cell: (gap) => <Link to={`/calls/${gap.call_id}`}>{time(gap.created_at)}</Link>,
          },
          {
            header: 'Answer',
            cell: (gap) => (
              <form
                className="row-form"
                onSubmit={(e) => {
                  e.preventDefault();
                  resolve.mutate(gap);
                }}
              >
                <input
                  aria-label={`Answer to “${gap.question}”`}
                  value={answers[gap.id] ?? ''}
                  onChange={(e) => setAnswers({ ...answers, [gap.id]: e.target.value })}
                  required
                  maxLength={4000}
                />
                <button type="submit" disabled={resolve.isPending} aria-label={`Add answer for “${gap.question}”`}>
                  Add answer
                </button>
                <button
                  type="button"
                  className="secondary"
                  onClick={() => dismiss.mutate(gap)}
                  aria-label={`Dismiss “${gap.question}”`}
                >
                  Dismiss
                </button>
              </form>
            ),
          },
        ]}
      />
    </>
  );
}

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Knowledge bases: text typed in, read from a file (PDF, Word, HTML, text) or from web pages, which agents search while
 * they talk when a call, an agent or a number names the id in its tools.
 */
export function KnowledgePage() {
  useTitle('Knowledge bases');
  const queries = useQueryClient();
  const list = useQuery({
    queryKey: KEY,
    queryFn: async () => (await api<{ data: { kbs: KnowledgeBase[] } }>('/v1/knowledge?limit=100')).data.kbs,
  });
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [source, setSource] = useState<'text' | 'file' | 'web'>('text');
  const [text, setText] = useState('');
  const [urls, setUrls] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [showing, setShowing] = useState<{ name: string; text: string } | null>(null);
  const [asking, setAsking] = useState<KnowledgeBase | null>(null);
  const refresh = () => void queries.invalidateQueries({ queryKey: KEY });

  const create = useMutation({
    mutationFn: async () => {
      if (source === 'text')
        return api('/v1/knowledge/learn', { method: 'POST', body: { type: 'text', name, description, text } });
      if (source === 'web') {
        const pages = urls
          .split(/\s+/)
          .map((u) => u.trim())
          .filter(Boolean);
        return api('/v1/knowledge/learn', { method: 'POST', body: { type: 'web', name, description, urls: pages } });
      }
      if (!file) throw new Error('Choose a file to read');
      const form = new FormData();
      form.set('type', 'file');
      if (name.trim()) form.set('name', name);
      if (description.trim()) form.set('description', description);
      form.set('file', file);
      return api('/v1/knowledge/learn', { method: 'POST', body: form });
    },
    onSuccess: () => {
      setName('');
      setDescription('');
      setText('');
      setUrls('');
      setFile(null);
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (id: string) => api(`/v1/knowledge/${id}`, { method: 'DELETE' }),
    onSuccess: refresh,
  });
  const show = useMutation({
    mutationFn: async (kb: KnowledgeBase) => {
      const got = await api<{ data: KnowledgeBase }>(`/v1/knowledge/${kb.id}?include_text=true`);
      setShowing({ name: kb.name, text: got.data.text ?? '' });
    },
  });

  return (
    <section>
      <ToolTabs />
      <h1>Knowledge bases</h1>
      <p className="muted">
        Give a knowledge base&apos;s ID in the <code>tools</code> of a call, an agent or a number: the agent looks up
        what the caller asks in it.
      </p>
      <form
        className="editor"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <h2>New knowledge base</h2>
        <Field label="Name" hint={source === 'file' ? "Optional: the file's name by default" : undefined}>
          <input value={name} onChange={(e) => setName(e.target.value)} required={source === 'text'} maxLength={200} />
        </Field>
        <Field label="Description" hint="What it holds">
          <input value={description} onChange={(e) => setDescription(e.target.value)} maxLength={2000} />
        </Field>
        <fieldset className="choice">
          <legend>Content</legend>
          <label>
            <input type="radio" name="source" checked={source === 'text'} onChange={() => setSource('text')} /> Type it
            in
          </label>
          <label>
            <input type="radio" name="source" checked={source === 'file'} onChange={() => setSource('file')} /> Upload a
            file
          </label>
          <label>
            <input type="radio" name="source" checked={source === 'web'} onChange={() => setSource('web')} /> Read web
            pages
          </label>
        </fieldset>
        {source === 'text' ? (
          <Field label="Text">
            <textarea rows={8} value={text} onChange={(e) => setText(e.target.value)} required />
          </Field>
        ) : source === 'web' ? (
          <Field label="Web pages" hint="One address per line, up to 20; each page is read once, now">
            <textarea
              rows={4}
              value={urls}
              onChange={(e) => setUrls(e.target.value)}
              placeholder="https://example.com/faq"
              required
            />
          </Field>
        ) : (
          <Field label="File" hint="PDF, Word (.docx), HTML or text (.txt, .md, .csv, .json), up to 16 MB">
            <input
              type="file"
              accept=".pdf,.docx,.html,.htm,.txt,.md,.markdown,.csv,.tsv,.json,text/*,application/pdf"
              onChange={(e) => setFile(e.target.files?.[0] ?? null)}
              required
            />
          </Field>
        )}
        <Problem error={create.error} />
        <div className="actions">
          <button type="submit" disabled={create.isPending}>
            {create.isPending ? 'Reading…' : 'Create knowledge base'}
          </button>
        </div>
      </form>
      <Problem error={list.error ?? remove.error ?? show.error} />
      {showing && (
        <div className="editor">
          <h2>Text of {showing.name}</h2>
          <pre className="knowledge-text">{showing.text}</pre>
          <div className="actions">
            <button type="button" className="secondary" onClick={() => setShowing(null)}>
              Close
            </button>
          </div>
        </div>
      )}
      {asking && <AskPanel key={asking.id} kb={asking} onClose={() => setAsking(null)} />}
      <ListTable
        rows={list.data}
        pending={list.isPending}
        what="knowledge bases"
        empty="No knowledge bases yet."
        rowKey={(kb) => kb.id}
        columns={[
          { header: 'Name', className: 'text', cell: (kb) => kb.name },
          {
            header: 'Source',
            cell: (kb) =>
              kb.file
                ? `${kb.file.file_name} (${size(kb.file.file_size)})`
                : kb.source_urls
                  ? kb.source_urls.split(',').join(', ')
                  : 'Text',
          },
          { header: 'ID', cell: (kb) => <code>{kb.id}</code> },
          { header: 'Updated', cell: (kb) => time(kb.updated_at) },
          {
            header: 'Actions',
            hiddenHeader: true,
            className: 'actions',
            cell: (kb) => (
              <>
                <button
                  type="button"
                  className="secondary"
                  onClick={() => show.mutate(kb)}
                  aria-label={`Show text of ${kb.name}`}
                >
                  Show text
                </button>
                <button type="button" className="secondary" onClick={() => setAsking(kb)} aria-label={`Ask ${kb.name}`}>
                  Ask
                </button>
                <button
                  type="button"
                  className="danger"
                  onClick={() => {
                    if (window.confirm(`Delete knowledge base ${kb.name}?`)) remove.mutate(kb.id);
                  }}
                  aria-label={`Delete knowledge base ${kb.name}`}
                >
                  Delete
                </button>
              </>
            ),
          },
        ]}
      />
      <Gaps names={new Map((list.data ?? []).map((kb) => [kb.id, kb.name]))} onAnswered={refresh} />
    </section>
  );
}
