import { normalizePhone } from './phone.js';
import { templatedUrlProblem } from './checks.js';
import { isRecord } from './records.js';

/**
 * Structural rules of a pathway (nodes and edges), shared by the API and the pathway runner.
 * Pure: no storage, no clock. Whether a referenced pathway (Transfer Pathway) exists is a runtime
 * question and is not checked here.
 */

/** The node types of the hosted service's pathway editor, in their canonical spelling. */
export const NODE_TYPES = [
  'Default',
  'End Call',
  'Transfer Call',
  'Webhook',
  'Knowledge Base',
  'SMS',
  'Custom Code',
  'Press Button',
  'Wait for Response',
  'Transfer Pathway',
  'Scheduling',
] as const;
export type NodeType = (typeof NODE_TYPES)[number];

export const EXTRACT_VAR_TYPES = ['string', 'integer', 'number', 'boolean'] as const;

export interface PathwayNodeData {
  name: string;
  isStart?: boolean;
  isGlobal?: boolean;
  globalLabel?: string;
  text?: string;
  prompt?: string;
  [field: string]: unknown;
}

/** A node as stored: `type` always in its canonical spelling; unknown fields are kept. */
export interface PathwayNode {
  id: string;
  type: NodeType;
  data: PathwayNodeData;
  [field: string]: unknown;
}

export interface PathwayEdge {
  id: string;
  source: string;
  target: string;
  label: string;
  description?: string;
  /** Compares extracted variables: the edge is open only when all hold, and then taken as a rule. */
  conditions?: EdgeCondition[];
  [field: string]: unknown;
}

export const CONDITION_OPERATORS = ['==', '!=', '>', '>=', '<', '<=', 'contains', 'exists', 'not_exists'] as const;
export type ConditionOperator = (typeof CONDITION_OPERATORS)[number];

/** `{variable, operator, value}`: e.g. `{"variable": "monthly_bill", "operator": ">=", "value": 100}`. */
export interface EdgeCondition {
  variable: string;
  operator: ConditionOperator;
  value?: string | number | boolean | null;
}

/** One comparison of a variable; numbers compare as numbers (also when written as text). */
function conditionHolds(c: EdgeCondition, variables: Record<string, unknown>): boolean {
  const actual = variables[c.variable];
  const present = actual !== undefined && actual !== null && actual !== '';
  switch (c.operator) {
    case 'exists':
      return present;
    case 'not_exists':
      return !present;
    case 'contains':
      return (
        present &&
        String(actual)
          .toLowerCase()
          .includes(String(c.value ?? '').toLowerCase())
      );
    default: {
      if (!present) return c.operator === '!=';
      const a = typeof actual === 'number' ? actual : Number(actual);
      const b = typeof c.value === 'number' ? c.value : Number(c.value);
      const numeric =
        typeof actual !== 'boolean' && typeof c.value !== 'boolean' && !Number.isNaN(a) && !Number.isNaN(b);
      const same = numeric ? a === b : String(actual).toLowerCase() === String(c.value).toLowerCase();
      if (c.operator === '==') return same;
      if (c.operator === '!=') return !same;
      if (!numeric) return false;
      if (c.operator === '>') return a > b;
      if (c.operator === '>=') return a >= b;
      if (c.operator === '<') return a < b;
      return a <= b;
    }
  }
}

/** Whether every condition of an edge holds (an edge without conditions is always open). */
export function edgeConditionsHold(conditions: unknown, variables: Record<string, unknown>): boolean {
  if (!Array.isArray(conditions)) return true;
  return conditions.every((c: unknown) => isRecord(c) && conditionHolds(c as unknown as EdgeCondition, variables));
}

/**
 * The hosted API keeps a pathway's global prompt as one entry of `nodes` that has no id, type or
 * data: `{"globalConfig": {"globalPrompt": "..."}}` (its own CLI writes and reads it so). Openline
 * keeps that entry where it was sent and returns it as it is.
 */
export interface GlobalConfigEntry {
  globalConfig: { globalPrompt?: string; [field: string]: unknown };
}

/** A member of a pathway's `nodes` as stored and sent: a node, or the global config entry. */
export type GraphNode = PathwayNode | GlobalConfigEntry;

export function isGlobalConfigEntry(value: unknown): value is GlobalConfigEntry {
  return isRecord(value) && isRecord(value.globalConfig) && value.data === undefined && value.id === undefined;
}

/** The nodes of a stored graph, without the global config entry, and the global prompt it holds. */
export function splitGraphNodes(nodes: readonly GraphNode[]): { nodes: PathwayNode[]; globalPrompt?: string } {
  const entry = nodes.find(isGlobalConfigEntry);
  const prompt = entry?.globalConfig.globalPrompt;
  return {
    nodes: nodes.filter((n): n is PathwayNode => !isGlobalConfigEntry(n)),
    ...(typeof prompt === 'string' && prompt.trim() !== '' && { globalPrompt: prompt }),
  };
}

export interface PathwayGraph {
  nodes: GraphNode[];
  edges: PathwayEdge[];
}

export type GraphResult = { ok: true; graph: PathwayGraph } | { ok: false; errors: string[] };

// Clients write types as the editor shows them ("End Call") or as identifiers ("end_call",
// "endCall"); comparing without case, spaces, dashes and underscores accepts all of them.
const typeKey = (type: string): string => type.toLowerCase().replace(/[\s_-]+/g, '');
const TYPES_BY_KEY = new Map<string, NodeType>(NODE_TYPES.map((t) => [typeKey(t), t]));

/** The canonical spelling of a node type, or undefined when it is not one. */
export function canonicalNodeType(type: unknown): NodeType | undefined {
  return typeof type === 'string' ? TYPES_BY_KEY.get(typeKey(type)) : undefined;
}

export function isKnownNodeType(type: unknown): boolean {
  return canonicalNodeType(type) !== undefined;
}

/** The id of the node with data.isStart true (the first such node), or undefined. */
export function startNodeId(nodes: readonly PathwayNode[]): string | undefined {
  return nodes.find((n) => n.data.isStart === true)?.id;
}

const nonEmptyString = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

const KEY = /^[0-9*#]$/;
const SEQUENCE = /^[0-9*#w]+$/;

/** Problems of one string field that may be absent; pushes at most one. */
function optionalString(data: Record<string, unknown>, field: string, at: string, errors: string[]): void {
  if (data[field] !== undefined && typeof data[field] !== 'string') errors.push(`${at}.${field} must be a string`);
}

/** Rules that depend on the node's type. `at` is e.g. `nodes[2].data`. */
function checkTypedData(type: NodeType, data: Record<string, unknown>, at: string, errors: string[]): void {
  const kind = `${/^[AEIOU]/.test(type) || type === 'SMS' ? 'an' : 'a'} ${type} node`;
  const need = (field: string): boolean => {
    if (data[field] === undefined || data[field] === null) {
      errors.push(`${at}.${field} is required for ${kind}`);
      return false;
    }
    if (!nonEmptyString(data[field]) && typeof data[field] === 'string') {
      errors.push(`${at}.${field} must not be empty`);
      return false;
    }
    return true;
  };
  const either = (a: string, b: string): void => {
    if (!nonEmptyString(data[a]) && !nonEmptyString(data[b])) {
      errors.push(`${at}.${a} or ${at}.${b} is required for ${kind}`);
    }
  };

  switch (type) {
    case 'Default':
      either('text', 'prompt');
      break;
    case 'Knowledge Base':
      either('kb', 'text');
      optionalString(data, 'kb', at, errors);
      break;
    case 'Transfer Call':
      if (need('transferNumber')) {
        const r = normalizePhone(data.transferNumber);
        if (!r.ok) errors.push(`${at}.transferNumber ${r.reason}`);
      }
      break;
    case 'Webhook': {
      if (need('url')) {
        const problem = templatedUrlProblem(data.url);
        if (problem) errors.push(`${at}.url ${problem}`);
      }
      const method = data.method;
      if (method !== undefined && (typeof method !== 'string' || !['GET', 'POST'].includes(method.toUpperCase()))) {
        errors.push(`${at}.method must be GET or POST`);
      }
      const headers = data.headers;
      if (
        headers !== undefined &&
        !isRecord(headers) &&
        !(Array.isArray(headers) && headers.every((h: unknown) => Array.isArray(h) && typeof h[0] === 'string'))
      ) {
        errors.push(`${at}.headers must be an object or a list of [name, value] pairs`);
      }
      if (
        data.body !== undefined &&
        data.body !== null &&
        typeof data.body !== 'string' &&
        typeof data.body !== 'object'
      ) {
        errors.push(`${at}.body must be an object or a string`);
      }
      const mapping = data.responseData;
      if (
        mapping !== undefined &&
        !(
          (Array.isArray(mapping) &&
            mapping.every((m: unknown) => isRecord(m) && nonEmptyString(m.name) && typeof m.data === 'string')) ||
          (isRecord(mapping) && Object.values(mapping).every((v) => typeof v === 'string'))
        )
      ) {
        errors.push(`${at}.responseData must be a list of {name, data} (data a JSON path) or an object of name: path`);
      }
      if (data.timeoutValue !== undefined && !(typeof data.timeoutValue === 'number' && data.timeoutValue > 0)) {
        errors.push(`${at}.timeoutValue must be a positive number of seconds`);
      }
      if (
        data.max_retries !== undefined &&
        !(typeof data.max_retries === 'number' && Number.isInteger(data.max_retries) && data.max_retries >= 0)
      ) {
        errors.push(`${at}.max_retries must be a whole number, 0 or more`);
      }
      break;
    }
    case 'Press Button': {
      const { digit, sequence } = data;
      if (digit === undefined && sequence === undefined) {
        errors.push(`${at}.digit or ${at}.sequence is required for ${kind}`);
      }
      if (
        digit !== undefined &&
        !(typeof digit === 'number'
          ? Number.isInteger(digit) && digit >= 0 && digit <= 9
          : typeof digit === 'string' && KEY.test(digit))
      ) {
        errors.push(`${at}.digit must be one key: 0-9, * or #`);
      }
      if (sequence !== undefined && !(typeof sequence === 'string' && SEQUENCE.test(sequence))) {
        errors.push(`${at}.sequence must be keys 0-9, *, # and w (a pause)`);
      }
      break;
    }
    case 'SMS':
      if (need('smsBody') && typeof data.smsBody !== 'string') errors.push(`${at}.smsBody must be a string`);
      if (data.phoneNumber !== undefined) {
        const r = normalizePhone(data.phoneNumber);
        if (!r.ok) errors.push(`${at}.phoneNumber ${r.reason}`);
      }
      break;
    case 'Transfer Pathway':
      if (need('transferPathway') && typeof data.transferPathway !== 'string') {
        errors.push(`${at}.transferPathway must be a string`);
      }
      optionalString(data, 'transferPathwayNode', at, errors);
      if (
        data.version !== undefined &&
        data.version !== null &&
        !(typeof data.version === 'number' && Number.isInteger(data.version) && data.version >= 0)
      ) {
        errors.push(`${at}.version must be a version number (0 = production)`);
      }
      break;
    case 'End Call':
    case 'Custom Code':
    case 'Wait for Response':
    case 'Scheduling':
      break;
  }
}

/** Rules of `data` that apply to every node type. */
function checkCommonData(data: Record<string, unknown>, at: string, errors: string[]): void {
  if (data.name === undefined) errors.push(`${at}.name is required`);
  else if (typeof data.name !== 'string') errors.push(`${at}.name must be a string`);
  else if (data.name.trim() === '') errors.push(`${at}.name must not be empty`);
  for (const flag of ['isStart', 'isGlobal']) {
    if (data[flag] !== undefined && typeof data[flag] !== 'boolean') errors.push(`${at}.${flag} must be a boolean`);
  }
  for (const field of ['text', 'prompt', 'condition', 'globalPrompt']) optionalString(data, field, at, errors);
  if (data.isGlobal === true && !nonEmptyString(data.globalLabel)) {
    errors.push(`${at}.globalLabel is required for a global node (isGlobal true)`);
  }
  if (data.modelOptions !== undefined && !isRecord(data.modelOptions)) {
    errors.push(`${at}.modelOptions must be an object`);
  } else if (isRecord(data.modelOptions)) {
    const { temperature, modelName } = data.modelOptions;
    if (temperature !== undefined && !(typeof temperature === 'number' && temperature >= 0 && temperature <= 2)) {
      errors.push(`${at}.modelOptions.temperature must be a number from 0 to 2`);
    }
    if (modelName !== undefined && !nonEmptyString(modelName)) {
      errors.push(`${at}.modelOptions.modelName must be a non-empty string`);
    }
  }
  if (data.isStatic !== undefined && typeof data.isStatic !== 'boolean')
    errors.push(`${at}.isStatic must be a boolean`);
  if (data.extractVars !== undefined) {
    if (!Array.isArray(data.extractVars)) {
      errors.push(`${at}.extractVars must be an array of [name, type, description]`);
    } else {
      data.extractVars.forEach((item: unknown, i) => {
        const field = `${at}.extractVars[${i}]`;
        if (!Array.isArray(item) || item.length < 3) {
          errors.push(`${field} must be an array [name, type, description]`);
          return;
        }
        const [name, type, description] = item as unknown[];
        if (!nonEmptyString(name)) errors.push(`${field}[0] (the name) must be a non-empty string`);
        if (typeof type !== 'string' || !(EXTRACT_VAR_TYPES as readonly string[]).includes(type)) {
          errors.push(`${field}[1] (the type) must be one of: ${EXTRACT_VAR_TYPES.join(', ')}`);
        }
        if (typeof description !== 'string') errors.push(`${field}[2] (the description) must be a string`);
      });
    }
  }
}

function checkNodes(nodes: unknown, requireNodes: boolean, errors: string[]): GraphNode[] {
  if (!Array.isArray(nodes)) {
    errors.push('nodes must be an array');
    return [];
  }
  const entries = nodes.flatMap((node: unknown, i) => (isGlobalConfigEntry(node) ? [i] : []));
  if (requireNodes && nodes.length === entries.length) errors.push('nodes must have at least 1 item');
  const result: GraphNode[] = [];
  const firstIndex = new Map<string, number>();
  const starts: number[] = [];
  nodes.forEach((node: unknown, i) => {
    const at = `nodes[${i}]`;
    if (isGlobalConfigEntry(node)) {
      if (i !== entries[0]) errors.push(`${at}: only one globalConfig entry is allowed (nodes[${entries[0]}] is one)`);
      optionalString(node.globalConfig, 'globalPrompt', `${at}.globalConfig`, errors);
      result.push(node);
      return;
    }
    if (!isRecord(node)) {
      errors.push(`${at} must be an object`);
      return;
    }
    const { id, type, data } = node;
    if (id === undefined) errors.push(`${at}.id is required`);
    else if (typeof id !== 'string') errors.push(`${at}.id must be a string`);
    else if (id === '') errors.push(`${at}.id must not be empty`);
    else if (firstIndex.has(id)) errors.push(`${at}.id "${id}" is already used by nodes[${firstIndex.get(id)}]`);
    else firstIndex.set(id, i);

    const canonical = canonicalNodeType(type);
    if (type === undefined) errors.push(`${at}.type is required`);
    else if (typeof type !== 'string') errors.push(`${at}.type must be a string`);
    else if (!canonical) errors.push(`${at}.type "${type}" is not a known node type (${NODE_TYPES.join(', ')})`);

    if (data === undefined) {
      errors.push(`${at}.data is required`);
      return;
    }
    if (!isRecord(data)) {
      errors.push(`${at}.data must be an object`);
      return;
    }
    checkCommonData(data, `${at}.data`, errors);
    if (canonical) checkTypedData(canonical, data, `${at}.data`, errors);
    if (data.isStart === true) starts.push(i);
    if (typeof id === 'string' && canonical) {
      result.push({ ...node, id, type: canonical, data: data as PathwayNodeData });
    }
  });
  if (nodes.length > entries.length && starts.length === 0) {
    errors.push('nodes must have exactly one start node (data.isStart true); none is marked');
  } else if (starts.length > 1) {
    errors.push(
      `nodes must have exactly one start node (data.isStart true); ${starts.length} are marked: ${starts
        .map((i) => `nodes[${i}]`)
        .join(', ')}`,
    );
  }
  return result;
}

function checkEdgeConditions(conditions: unknown, at: string, errors: string[]): void {
  if (conditions === undefined) return;
  if (!Array.isArray(conditions)) {
    errors.push(`${at}.conditions must be an array of {variable, operator, value}`);
    return;
  }
  conditions.forEach((c: unknown, i) => {
    const field = `${at}.conditions[${i}]`;
    if (!isRecord(c)) {
      errors.push(`${field} must be an object {variable, operator, value}`);
      return;
    }
    if (!nonEmptyString(c.variable)) errors.push(`${field}.variable must be a non-empty string`);
    if (typeof c.operator !== 'string' || !(CONDITION_OPERATORS as readonly string[]).includes(c.operator)) {
      errors.push(`${field}.operator must be one of: ${CONDITION_OPERATORS.join(', ')}`);
    } else if (c.operator !== 'exists' && c.operator !== 'not_exists') {
      const v = c.value;
      if (!(typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')) {
        errors.push(`${field}.value is required for ${c.operator} (a string, number or boolean)`);
      }
    }
  });
}

function checkEdges(edges: unknown, nodeIds: Set<string>, nodesKnown: boolean, errors: string[]): PathwayEdge[] {
  if (!Array.isArray(edges)) {
    errors.push('edges must be an array');
    return [];
  }
  const result: PathwayEdge[] = [];
  const firstIndex = new Map<string, number>();
  edges.forEach((edge: unknown, i) => {
    const at = `edges[${i}]`;
    if (!isRecord(edge)) {
      errors.push(`${at} must be an object`);
      return;
    }
    // The hosted API answers with the label and description under `data` too: either place is read.
    const inData = isRecord(edge.data) ? edge.data : {};
    const { id, source, target } = edge;
    const label = edge.label ?? inData.label;
    const description = edge.description ?? inData.description;
    if (id === undefined) errors.push(`${at}.id is required`);
    else if (typeof id !== 'string') errors.push(`${at}.id must be a string`);
    else if (id === '') errors.push(`${at}.id must not be empty`);
    else if (firstIndex.has(id)) errors.push(`${at}.id "${id}" is already used by edges[${firstIndex.get(id)}]`);
    else firstIndex.set(id, i);
    for (const [field, value] of [
      ['source', source],
      ['target', target],
    ] as const) {
      if (value === undefined) errors.push(`${at}.${field} is required`);
      else if (typeof value !== 'string') errors.push(`${at}.${field} must be a string`);
      // Without a nodes array every reference would fail; that array has its own error.
      else if (nodesKnown && !nodeIds.has(value)) errors.push(`${at}.${field} "${value}" is not a node`);
    }
    if (label === undefined) errors.push(`${at}.label is required`);
    else if (typeof label !== 'string') errors.push(`${at}.label must be a string`);
    else if (label.trim() === '') errors.push(`${at}.label must not be empty`);
    if (description !== undefined && typeof description !== 'string') {
      errors.push(`${at}.description must be a string`);
    }
    checkEdgeConditions(edge.conditions, at, errors);
    if (
      typeof id === 'string' &&
      typeof source === 'string' &&
      typeof target === 'string' &&
      typeof label === 'string'
    ) {
      const said = typeof description === 'string' ? { description } : {};
      result.push({ ...edge, id, source, target, label, ...said, data: { ...inData, label, ...said } } as PathwayEdge);
    }
  });
  return result;
}

/**
 * Checks a whole graph and returns it with node types in canonical spelling, or every problem
 * found (one sentence each, naming the field). `requireNodes`: a version needs at least one node;
 * a draft may be empty.
 */
export function checkPathwayGraph(nodes: unknown, edges: unknown, options: { requireNodes: boolean }): GraphResult {
  const errors: string[] = [];
  const checkedNodes = checkNodes(nodes, options.requireNodes, errors);
  const nodeIds = new Set(
    Array.isArray(nodes) ? nodes.flatMap((n: unknown) => (isRecord(n) && typeof n.id === 'string' ? [n.id] : [])) : [],
  );
  const checkedEdges = checkEdges(edges, nodeIds, Array.isArray(nodes), errors);
  if (errors.length > 0) return { ok: false, errors: [...new Set(errors)] };
  return { ok: true, graph: { nodes: checkedNodes, edges: checkedEdges } };
}
