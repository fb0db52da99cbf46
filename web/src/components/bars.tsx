import { useEffect, useRef, useState } from 'react';

/**
 * A small bar chart in SVG: one group per row, stacked parts with a legend. It is drawn at the
 * width it is shown at (not scaled), so its labels keep their size on a phone.
 */
export interface BarRow {
  label: string;
  parts: { name: string; value: number }[];
}

const COLOURS = ['#2563eb', '#16a34a', '#d97706', '#9333ea', '#dc2626', '#0891b2', '#64748b'];

export function StackedBars({ rows, unit, title }: { rows: BarRow[]; unit: string; title: string }) {
  const names = [...new Set(rows.flatMap((r) => r.parts.map((p) => p.name)))];
  const max = Math.max(1, ...rows.map((r) => r.parts.reduce((sum, p) => sum + Math.max(0, p.value), 0)));
  const rowHeight = 26;
  const labelWidth = 110;
  const figure = useRef<HTMLElement>(null);
  const [width, setWidth] = useState(640);
  useEffect(() => {
    const element = figure.current;
    if (!element || typeof ResizeObserver === 'undefined') return;
    const observer = new ResizeObserver(() => {
      const inner = element.clientWidth - parseFloat(getComputedStyle(element).paddingLeft) * 2;
      if (inner > 0) setWidth(Math.round(Math.max(280, Math.min(760, inner))));
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  const height = rows.length * rowHeight + 8;
  return (
    <figure className="chart" ref={figure}>
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={title} width={width} height={height}>
        {rows.map((row, r) => {
          let x = labelWidth;
          const total = row.parts.reduce((sum, p) => sum + Math.max(0, p.value), 0);
          return (
            <g key={row.label} transform={`translate(0, ${r * rowHeight + 4})`}>
              <text x={0} y={15} fontSize={12}>
                {row.label}
              </text>
              {row.parts.map((part) => {
                const w = (Math.max(0, part.value) / max) * (width - labelWidth - 90);
                const rect = (
                  <rect
                    key={part.name}
                    x={x}
                    y={2}
                    width={w}
                    height={rowHeight - 8}
                    fill={COLOURS[names.indexOf(part.name) % COLOURS.length]}
                  >
                    <title>
                      {part.name}: {Math.round(part.value)} {unit}
                    </title>
                  </rect>
                );
                x += w;
                return rect;
              })}
              <text x={x + 6} y={15} fontSize={12}>
                {Math.round(total)} {unit}
              </text>
            </g>
          );
        })}
      </svg>
      <ul className="legend">
        {names.map((name, i) => (
          <li key={name}>
            <span className="swatch" style={{ background: COLOURS[i % COLOURS.length] }} /> {name}
          </li>
        ))}
      </ul>
    </figure>
  );
}
