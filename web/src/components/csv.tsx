import { useState } from 'react';
import { parse } from 'csv-parse/browser/esm/sync';
import type { Json } from '../api';

/** Most rows a browser upload takes at once (a campaign takes up to 100,000 numbers). */
const MAX_ROWS = 100_000;

/**
 * Rows of a CSV file with a header line: one object per row, keyed by the header. The phone number
 * column may be called phone_number, phone or number.
 */
export function readCsv(text: string): Json[] {
  const rows = parse(text, { columns: true, skip_empty_lines: true, trim: true, bom: true }) as Record<
    string,
    string
  >[];
  if (rows.length === 0) throw new Error('The file has no rows under its header line');
  if (rows.length > MAX_ROWS) throw new Error(`The file has ${rows.length} rows; at most ${MAX_ROWS} are taken`);
  const header = Object.keys(rows[0]!);
  const phone = header.find((h) => /^(phone_number|phone|number|to)$/i.test(h));
  if (!phone) throw new Error('No phone_number column in the header line');
  return rows.map((row) => {
    const { [phone]: number, ...rest } = row;
    return { phone_number: number, ...rest };
  });
}

/** A CSV file picker that reports the rows it read (or why it could not). */
export function CsvInput({ label, onRows }: { label: string; onRows(rows: Json[] | null): void }) {
  const [status, setStatus] = useState<string | null>(null);
  return (
    <label className="field">
      <span>{label}</span>
      <input
        type="file"
        accept=".csv,text/csv"
        onChange={async (e) => {
          const file = e.target.files?.[0];
          if (!file) return onRows(null);
          try {
            const rows = readCsv(await file.text());
            setStatus(`${rows.length} numbers read from ${file.name}`);
            onRows(rows);
          } catch (error) {
            setStatus(`${file.name}: ${(error as Error).message}`);
            onRows(null);
          }
        }}
      />
      <small className="muted" role="status">
        {status ?? 'A header line with phone_number, then one row per number; other columns become variables.'}
      </small>
    </label>
  );
}
