import { useId, useState } from 'react';
import { parse } from 'csv-parse/browser/esm/sync';
import type { Json } from '../api';

/** Most rows a browser upload takes at once (a campaign takes up to 100,000 numbers). */
const MAX_ROWS = 100_000;
/** Problems listed when a file is chosen; the count says how many more there are. */
const SHOWN_PROBLEMS = 5;

/** The rows of a CSV file, and the line of the file each one ends on (for messages about a row). */
export interface CsvRows {
  rows: Json[];
  lines: number[];
}

/** A row as the user finds it in the file: "row 5 (line 6)" (the header is line 1). */
export function rowPlace(file: CsvRows, i: number): string {
  const line = file.lines[i];
  return line === undefined ? `row ${i + 1}` : `row ${i + 1} (line ${line})`;
}

/**
 * A server's message about the rows sent as `field` (`numbers[4].phone_number must not contain
 * letters`), in the file's words: `row 5 (line 6): phone_number must not contain letters`.
 */
export function describeRows(field: string, file: CsvRows | null): (line: string) => string {
  const at = new RegExp(`${field}\\[(\\d+)\\]`, 'g');
  return (line) => {
    if (!file) return line;
    const subject = new RegExp(`^${field}\\[(\\d+)\\]\\.?`).exec(line);
    const rest = (subject ? line.slice(subject[0].length).trimStart() : line).replace(at, (_all, i: string) =>
      rowPlace(file, Number(i)),
    );
    return subject ? `${rowPlace(file, Number(subject[1]))}: ${rest}` : rest;
  };
}

/**
 * Rows of a CSV file with a header line: one object per row, keyed by the header. The phone number
 * column may be called phone_number, phone or number.
 */
export function readCsv(text: string): CsvRows {
  const records = parse(text, {
    columns: true,
    skip_empty_lines: true,
    trim: true,
    bom: true,
    info: true,
  }) as { record: Record<string, string>; info: { lines: number } }[];
  if (records.length === 0) throw new Error('The file has no rows under its header line');
  if (records.length > MAX_ROWS) throw new Error(`The file has ${records.length} rows; at most ${MAX_ROWS} are taken`);
  const header = Object.keys(records[0]!.record);
  const phone = header.find((h) => /^(phone_number|phone|number|to)$/i.test(h));
  if (!phone) throw new Error('No phone_number column in the header line');
  return {
    rows: records.map(({ record }) => {
      const { [phone]: number, ...rest } = record;
      return { phone_number: number, ...rest };
    }),
    lines: records.map(({ info }) => info.lines),
  };
}

/** The rows' problems the server would refuse them for: a number it cannot call, or one given twice. */
async function rowProblems(file: CsvRows): Promise<string[]> {
  // The phone number rules load with the first file, not with the dashboard.
  const { normalizePhone } = await import('../../../src/domain/phone.js');
  const problems: string[] = [];
  const seen = new Map<string, number>();
  file.rows.forEach((row, i) => {
    const phone = normalizePhone(row.phone_number);
    if (!phone.ok) problems.push(`${rowPlace(file, i)}: phone_number ${phone.reason}`);
    else if (seen.has(phone.e164))
      problems.push(`${rowPlace(file, i)}: ${phone.e164} is already on ${rowPlace(file, seen.get(phone.e164)!)}`);
    else seen.set(phone.e164, i);
  });
  return problems;
}

/** A CSV file picker that checks the rows it read and says which ones to fix (or why it could not read it). */
export function CsvInput({ label, onRows }: { label: string; onRows(file: CsvRows | null): void }) {
  const [status, setStatus] = useState<string | null>(null);
  const [problems, setProblems] = useState<string[]>([]);
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="file"
        accept=".csv,text/csv"
        aria-describedby={`${id}-status`}
        aria-invalid={problems.length > 0}
        onChange={async (e) => {
          const chosen = e.target.files?.[0];
          setProblems([]);
          if (!chosen) return onRows(null);
          try {
            const file = readCsv(await chosen.text());
            const found = await rowProblems(file);
            if (found.length > 0) {
              setStatus(`${chosen.name}: ${found.length} of ${file.rows.length} rows to fix`);
              setProblems(found);
              return onRows(null);
            }
            setStatus(`${file.rows.length} numbers read from ${chosen.name}`);
            onRows(file);
          } catch (error) {
            setStatus(`${chosen.name}: ${(error as Error).message}`);
            onRows(null);
          }
        }}
      />
      <div id={`${id}-status`} role="status" className={`hint${problems.length ? ' problem-text' : ''}`}>
        {status ?? 'A header line with phone_number, then one row per number; other columns become variables.'}
        {problems.length > 0 && (
          <ul className="field-problems">
            {problems.slice(0, SHOWN_PROBLEMS).map((p) => (
              <li key={p}>{p}</li>
            ))}
            {problems.length > SHOWN_PROBLEMS && <li>and {problems.length - SHOWN_PROBLEMS} more</li>}
          </ul>
        )}
      </div>
    </div>
  );
}
