import { cloneElement, useId, useState, type ReactElement } from 'react';
import { problemText } from '../api';

/** When something happened, in the reader's locale. */
export function time(iso: string | null | undefined): string {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function Problem({ error }: { error: unknown }) {
  if (!error) return null;
  const lines = problemText(error);
  return (
    <div role="alert" className="problem">
      {lines.length === 1 ? (
        lines[0]
      ) : (
        <ul>
          {lines.map((line) => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return <p aria-busy="true">Loading {what}…</p>;
}

export function Badge({ value }: { value: string | null | undefined }) {
  if (!value) return <span className="muted">—</span>;
  return <span className={`badge badge-${value.replace(/[^a-z-]/gi, '')}`}>{value}</span>;
}

export function Json({ value }: { value: unknown }) {
  if (value === null || value === undefined) return <span className="muted">none</span>;
  return <pre className="json">{JSON.stringify(value, null, 2)}</pre>;
}

/**
 * A labelled form control: the label names the control alone (its accessible name), the hint is
 * its description.
 */
export function Field({ label, children, hint }: { label: string; children: ReactElement; hint?: string }) {
  const id = useId();
  const control = cloneElement(children as ReactElement<{ id?: string; 'aria-describedby'?: string }>, {
    id,
    ...(hint && { 'aria-describedby': `${id}-hint` }),
  });
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {control}
      {hint && (
        <small id={`${id}-hint`} className="muted">
          {hint}
        </small>
      )}
    </div>
  );
}

/** A JSON editor: a textarea that says where its text stops being JSON. */
export function JsonArea({
  label,
  value,
  onChange,
  rows = 8,
}: {
  label: string;
  value: string;
  onChange(text: string): void;
  rows?: number;
}) {
  const [touched, setTouched] = useState(false);
  let problem: string | null = null;
  if (touched && value.trim() !== '') {
    try {
      JSON.parse(value);
    } catch (error) {
      problem = (error as Error).message;
    }
  }
  return (
    <label className="field">
      <span>{label}</span>
      <textarea
        className="code"
        rows={rows}
        value={value}
        spellCheck={false}
        onChange={(e) => {
          setTouched(true);
          onChange(e.target.value);
        }}
        aria-invalid={problem !== null}
      />
      {problem && <small className="problem-text">Not JSON: {problem}</small>}
    </label>
  );
}

/** Parses a JSON field of a form: undefined when empty, an error naming the field otherwise. */
export function parseJsonField(name: string, text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${name} is not valid JSON: ${(error as Error).message}`);
  }
}
