import { cloneElement, useEffect, useId, useState, type ReactElement, type ReactNode } from 'react';
import { problemText } from '../api';

/** The browser tab's title for a page: "Calls · Openline"; just "Openline" until `title` is known. */
export function useTitle(title: string | null | undefined): void {
  useEffect(() => {
    document.title = title ? `${title} · Openline` : 'Openline';
  }, [title]);
}

/** When something happened, in the reader's locale. */
export function time(iso: string | null | undefined): string {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** A count with its noun: "1 turn", "3 turns". */
export function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/**
 * The start of a long text, for a heading or a list: cut at a word boundary before `max`
 * characters, with an ellipsis when anything was cut.
 */
export function brief(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s,.;:!?-]+$/, '')}…`;
}

/** A refused request's problems; `describe` words each line for the page (e.g. names for paths). */
export function Problem({ error, describe }: { error: unknown; describe?(line: string): string }) {
  if (!error) return null;
  const lines = describe ? problemText(error).map(describe) : problemText(error);
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
 * its description; `problems`, the server's refusals of its value, show under it, mark it invalid
 * and describe it too.
 */
export function Field({
  label,
  children,
  hint,
  problems,
}: {
  label: string;
  children: ReactElement;
  hint?: string;
  problems?: string[] | undefined;
}) {
  const id = useId();
  const invalid = (problems?.length ?? 0) > 0;
  const describedBy = [hint && `${id}-hint`, invalid && `${id}-problems`].filter(Boolean).join(' ');
  const control = cloneElement(
    children as ReactElement<{ id?: string; 'aria-describedby'?: string; 'aria-invalid'?: boolean }>,
    {
      id,
      ...(describedBy && { 'aria-describedby': describedBy }),
      ...(invalid && { 'aria-invalid': true }),
    },
  );
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {control}
      {hint && (
        <small id={`${id}-hint`} className="muted">
          {hint}
        </small>
      )}
      <FieldProblems id={`${id}-problems`} lines={problems} />
    </div>
  );
}

/**
 * A JSON editor: a textarea that says where its text stops being JSON. The message is the
 * textarea's description (not part of its label), read out politely as it changes.
 */
export function JsonArea({
  label,
  value,
  onChange,
  rows = 8,
  autoFocus = false,
}: {
  label: string;
  value: string;
  onChange(text: string): void;
  rows?: number;
  /** Takes the keyboard's focus when shown (an editor opened from a button elsewhere on the page). */
  autoFocus?: boolean;
}) {
  const [touched, setTouched] = useState(false);
  const id = useId();
  let problem: string | null = null;
  if (touched && value.trim() !== '') {
    try {
      JSON.parse(value);
    } catch (error) {
      problem = (error as Error).message;
    }
  }
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea
        id={id}
        className="code"
        rows={rows}
        value={value}
        spellCheck={false}
        autoFocus={autoFocus}
        onChange={(e) => {
          setTouched(true);
          onChange(e.target.value);
        }}
        aria-invalid={problem !== null}
        aria-describedby={`${id}-problem`}
      />
      <small id={`${id}-problem`} className="problem-text" aria-live="polite">
        {problem && `Not JSON: ${problem}`}
      </small>
    </div>
  );
}

/** Parses a JSON field of a form: undefined when empty, an error naming the field otherwise. */
/** A form's whole-number field: `fallback` when left empty, else its number, or an error naming it. */
export function wholeNumberField(name: string, text: string, fallback: number): number {
  if (text.trim() === '') return fallback;
  if (!/^\d+$/.test(text.trim())) throw new Error(`${name} must be a whole number, got "${text.trim()}"`);
  return Number(text.trim());
}

/** The CSV file a form sends its rows from, or an error naming the field when none was chosen. */
export function chosenCsv<T>(name: string, file: T | null): T {
  if (!file) throw new Error(`${name}: no usable file chosen; choose a CSV file with a phone_number column`);
  return file;
}

export function parseJsonField(name: string, text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${name} is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * A refused form's problems by field: each error the server named goes to the first field whose
 * names it starts with (`assertions[0].type ...` to `assertions`); the rest are `other`.
 */
export function problemsByField<F extends string>(
  error: unknown,
  fields: Record<F, string[]>,
): { byField: Partial<Record<F, string[]>>; other: string[] } {
  const byField: Partial<Record<F, string[]>> = {};
  const other: string[] = [];
  if (!error) return { byField, other };
  for (const line of problemText(error)) {
    const field = (Object.keys(fields) as F[]).find((f) =>
      fields[f].some((name) => line.startsWith(name) && /^[\s.[:]/.test(line.slice(name.length))),
    );
    if (field) byField[field] = [...(byField[field] ?? []), line];
    else other.push(line);
  }
  return { byField, other };
}

/** The server's problems with one field, under it. */
export function FieldProblems({ lines, id }: { lines: string[] | undefined; id?: string }) {
  if (!lines?.length) return null;
  return (
    <ul role="alert" className="problem-text field-problems" id={id}>
      {lines.map((line) => (
        <li key={line}>{line}</li>
      ))}
    </ul>
  );
}

/** A column of a ListTable: its header, and what a row shows in it. */
export interface Column<T> {
  header: string;
  /** The header is for screen readers only (a column of buttons). */
  hiddenHeader?: boolean;
  className?: string;
  cell(row: T): ReactNode;
}

/**
 * A list of records as the dashboard shows them: "Loading …" while pending, the empty text when
 * there is none, else a table with a header row and a row each.
 */
export function ListTable<T>({
  rows,
  pending = false,
  what,
  empty,
  columns,
  rowKey,
}: {
  rows: T[] | undefined;
  pending?: boolean;
  /** What is loading, as "Loading {what}…" says it. */
  what: string;
  empty: ReactNode;
  columns: Column<T>[];
  rowKey(row: T): string;
}) {
  if (pending) return <Loading what={what} />;
  if (!rows) return null;
  if (rows.length === 0) return <p className="empty">{empty}</p>;
  return (
    <table className="list">
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c.header} scope="col">
              {c.hiddenHeader ? <span className="sr-only">{c.header}</span> : c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={rowKey(row)}>
            {columns.map((c) => (
              <td key={c.header} className={c.className}>
                {c.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
