import type { NodeType } from '../domain/pathway-graph.js';

/**
 * One step of a pathway call, as `pathway_logs` shows it (the field holds a JSON array of these,
 * as text, per seed 2.3). A step is one node acting: entered and speaking, deciding where to go
 * after the caller's words, calling a webhook, sending an SMS, transferring.
 */
export interface PathwayLogEntry {
  /** 1, 2, 3, ... in call order. */
  step: number;
  /** ISO time of the step (the service clock). */
  at: string;
  pathway_id: string;
  /** The version the call runs; null for a pathway's draft. */
  version: number | null;
  node_id: string;
  node_name: string;
  node_type: NodeType;
  /**
   * What happened: `entered` (the node began: it spoke or acted), `decided` (the caller's words
   * were read and a way chosen), `stayed` (no way fit, or the node's condition is not met yet),
   * `returned` (back from a global node), `silence`, `menu` (an automated menu was heard).
   */
  event: 'entered' | 'decided' | 'stayed' | 'returned' | 'silence' | 'menu';
  /** The caller's words this step reacted to, if any. */
  heard: string | null;
  /** What the agent said at this step, if anything. */
  said: string | null;
  /** The edge taken (or the global node jumped to), if any. */
  chosen_edge: { id: string; label: string; target: string } | null;
  /** Why: the model's reason, the words that matched, a rule (only path, webhook status, ...). */
  reason: string;
  /** Who decided: the language model, the offline model's word matching, or a fixed rule. */
  decided_by: 'llm' | 'offline' | 'rule';
  /** Variables this step set (extractVars, webhook response data). */
  variables: Record<string, unknown>;
  /** The action the step ended with (`finish`, `transfer`, `press_buttons 2`, `wait`), if any. */
  action: string | null;
  /** The node's tag (its `data.tag`: the tag's name, or the text), on a node that has one. */
  tag?: string;
}

/** A node's tag: `data.tag` as the hosted editor writes it (`{name, color}`), or plain text. */
export function nodeTag(data: Record<string, unknown>): string | undefined {
  const tag = data.tag;
  const name =
    typeof tag === 'string' ? tag : tag && typeof tag === 'object' ? (tag as { name?: unknown }).name : undefined;
  return typeof name === 'string' && name.trim() !== '' ? name.trim() : undefined;
}

/**
 * A call's `pathway_tags`: the tags of the nodes it entered, each once, in the order first
 * reached, from its `pathway_logs` (JSON text, or null for a call without a pathway).
 */
export function pathwayTags(logs: string | null): string[] {
  if (!logs) return [];
  let steps: unknown;
  try {
    steps = JSON.parse(logs);
  } catch {
    return [];
  }
  if (!Array.isArray(steps)) return [];
  const tags = new Set<string>();
  for (const step of steps as Partial<PathwayLogEntry>[]) {
    if (step?.event === 'entered' && typeof step.tag === 'string') tags.add(step.tag);
  }
  return [...tags];
}
