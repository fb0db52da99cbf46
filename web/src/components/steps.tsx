import type { PathwayLogEntry } from '../../../src/pathways/logs.js';
import { Json } from './ui';

/** A pathway's steps as a call record or a pathway chat keeps them: node, what was heard and said, why. */
export function PathwaySteps({ steps }: { steps: readonly PathwayLogEntry[] }) {
  if (steps.length === 0) return <p className="muted">No steps yet.</p>;
  return (
    <ol className="steps" aria-label="Pathway steps">
      {steps.map((step) => (
        <li key={step.step}>
          <div>
            <strong>{step.node_name}</strong> <span className="muted">{step.event}</span>
            {step.chosen_edge && <span> → {step.chosen_edge.label}</span>}
            {step.action && <span className="badge">{step.action}</span>}
          </div>
          {step.heard && <div>Heard: “{step.heard}”</div>}
          {step.said && <div>Said: “{step.said}”</div>}
          {step.reason && (
            <div className="muted">
              {step.reason} ({step.decided_by})
            </div>
          )}
          {Object.keys(step.variables).length > 0 && <Json value={step.variables} />}
        </li>
      ))}
    </ol>
  );
}
