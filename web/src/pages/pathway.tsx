import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useBlocker, useParams } from 'react-router';
import {
  Background,
  Controls,
  Handle,
  Position,
  ReactFlow,
  type Edge,
  type EdgeChange,
  type Node,
  type NodeChange,
  type NodeProps,
  type ReactFlowInstance,
} from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import {
  NODE_TYPES,
  checkPathwayGraph,
  type PathwayEdge,
  isGlobalConfigEntry,
  type GlobalConfigEntry,
  type GraphNode,
  type PathwayNode,
} from '../../../src/domain/pathway-graph.js';
import type { PathwayDetail, VersionDetail, VersionSummary } from '../../../src/schemas/pathway.js';
import type { ChatTurnResult } from '../../../src/pathways/chat.js';
import { api, type Json } from '../api';
import { useUnsavedWork } from '../auth';
import { Field, JsonArea, Loading, Problem, parseJsonField, useTitle } from '../components/ui';
import { PathwaySteps } from '../components/steps';

interface Graph {
  nodes: PathwayNode[];
  edges: PathwayEdge[];
  /** The global config entries of `nodes` (the global prompt), kept as they came and saved back. */
  globals: GlobalConfigEntry[];
}

/** A pathway's graph as the editor holds it: the nodes apart from the global config entry. */
function toGraph(graph: { nodes: GraphNode[]; edges: PathwayEdge[] }): Graph {
  return {
    nodes: graph.nodes.filter((n): n is PathwayNode => !isGlobalConfigEntry(n)),
    edges: graph.edges,
    globals: graph.nodes.filter(isGlobalConfigEntry),
  };
}

/** The graph as the API takes it: the global config entry first among the nodes, as it came. */
function hosted(graph: Graph): { nodes: GraphNode[]; edges: PathwayEdge[] } {
  return { nodes: [...graph.globals, ...graph.nodes], edges: graph.edges };
}

type Selection = { kind: 'node'; id: string } | { kind: 'edge'; id: string } | null;

const COLUMN = 240;
const ROW = 150;
/** About the room a new node's card takes on the canvas (.node-card is at most 220 px wide). */
const CARD = { width: 220, height: 120 };
const GAP = 20;

type Point = { x: number; y: number };
type Box = Point & { width: number; height: number };

/**
 * Where a new node goes: the free place nearest the middle of what the canvas shows (`view`, in
 * canvas coordinates), clear of the cards already there, so it appears where the user is looking;
 * null when the view has no room.
 */
function freePlace(view: { left: number; top: number; right: number; bottom: number }, taken: Box[]): Point | null {
  const middle = { x: (view.left + view.right - CARD.width) / 2, y: (view.top + view.bottom - CARD.height) / 2 };
  const clear = (p: Point) =>
    taken.every(
      (t) =>
        p.x + CARD.width + GAP <= t.x ||
        t.x + t.width + GAP <= p.x ||
        p.y + CARD.height + GAP <= t.y ||
        t.y + t.height + GAP <= p.y,
    );
  const places: Point[] = [];
  for (let y = view.top + GAP; y + CARD.height <= view.bottom; y += GAP)
    for (let x = view.left + GAP; x + CARD.width <= view.right; x += GAP) places.push({ x, y });
  // Below the middle before above it: a pathway reads from the top down.
  const distance = (p: Point) => Math.hypot(p.x - middle.x, p.y - middle.y) + (p.y < middle.y ? CARD.height : 0);
  return places.filter(clear).sort((a, b) => distance(a) - distance(b))[0] ?? null;
}

/**
 * Where nodes without a stored position go: layered from the start node (a row per step away
 * from it, in edge order), global and unreachable nodes on the rows after them.
 */
function layout(graph: Graph): Map<string, { x: number; y: number }> {
  const depth = new Map<string, number>();
  const queue = graph.nodes.filter((n) => n.data.isStart === true).map((n) => n.id);
  if (queue.length === 0 && graph.nodes[0]) queue.push(graph.nodes[0].id);
  for (const id of queue) depth.set(id, 0);
  while (queue.length > 0) {
    const id = queue.shift()!;
    for (const edge of graph.edges)
      if (edge.source === id && !depth.has(edge.target)) {
        depth.set(edge.target, depth.get(id)! + 1);
        queue.push(edge.target);
      }
  }
  const deepest = Math.max(-1, ...depth.values());
  let extra = 0;
  const rows = new Map<number, number>();
  const positions = new Map<string, { x: number; y: number }>();
  for (const node of graph.nodes) {
    const row = depth.get(node.id) ?? deepest + 1 + Math.floor(extra++ / 4);
    const column = rows.get(row) ?? 0;
    rows.set(row, column + 1);
    positions.set(node.id, { x: column * COLUMN, y: row * ROW });
  }
  return positions;
}

function positionOf(node: PathwayNode, auto: Map<string, { x: number; y: number }>): { x: number; y: number } {
  const p = node.position as { x?: unknown; y?: unknown } | undefined;
  return typeof p?.x === 'number' && typeof p?.y === 'number'
    ? { x: p.x, y: p.y }
    : (auto.get(node.id) ?? { x: 0, y: 0 });
}

/**
 * A graph problem in the words of the editor: `nodes[1].data.text or nodes[1].data.prompt is
 * required for a Default node` becomes `Node 2: text or prompt is required for a Default node`,
 * naming the node by its name and a path by its label, as the canvas shows them. `offset` is the
 * number of entries before the editor's nodes in the list the message counts (the global prompt
 * entry, in the server's answer to a save).
 */
function describeProblem(problem: string, graph: Graph, offset = 0): string {
  const nodeName = (node: PathwayNode | undefined, i: number): string => {
    if (!node) return `node ${i + 1}`;
    const name = typeof node.data.name === 'string' ? node.data.name.trim() : '';
    return name || `Unnamed ${node.type} node`;
  };
  const name = (kind: string, i: number): string => {
    if (kind === 'nodes') return nodeName(graph.nodes[i - offset], i - offset);
    const edge = graph.edges[i];
    if (!edge) return `path ${i + 1}`;
    if (edge.label?.trim()) return `Path “${edge.label.trim()}”`;
    const end = (id: string) =>
      nodeName(
        graph.nodes.find((n) => n.id === id),
        graph.nodes.length,
      );
    return `Path from ${end(edge.source)} to ${end(edge.target)}`;
  };
  const subject = /^(nodes|edges)\[(\d+)\](?:\.data)?/.exec(problem);
  let rest = problem;
  let head = '';
  if (subject) {
    head = `${name(subject[1]!, Number(subject[2]))}: `;
    // The subject's own fields by their names alone.
    rest = problem
      .slice(subject[0].length)
      .replaceAll(`${subject[0]}.`, '')
      .replace(/^[.:]?\s*/, '');
  }
  rest = rest
    .replace(/(nodes|edges)\[(\d+)\](?:\.data)?(?:\.(\w+))?/g, (_all, kind: string, i: string, field?: string) =>
      field ? `${field} of ${name(kind, Number(i))}` : name(kind, Number(i)),
    )
    .replace(/^nodes must/, 'The pathway must')
    .replace('(data.isStart true)', '(Start node ticked)');
  return head + rest;
}

/** Problems per node and edge id, from messages such as `nodes[2].data.name is required`, as the editor words them. */
function problemsById(graph: Graph, problems: string[]): Map<string, string[]> {
  const byId = new Map<string, string[]>();
  for (const problem of problems) {
    const match = /^(nodes|edges)\[(\d+)\]/.exec(problem);
    if (!match) continue;
    const item = (match[1] === 'nodes' ? graph.nodes : graph.edges)[Number(match[2])];
    if (!item) continue;
    byId.set(item.id, [...(byId.get(item.id) ?? []), describeProblem(problem, graph)]);
  }
  return byId;
}

interface CardData extends Record<string, unknown> {
  node: PathwayNode;
  problems: string[];
  current: boolean;
}

/** A node on the canvas: its name and type, start and global marks, and its problems. */
function NodeCard({ data, selected }: NodeProps<Node<CardData>>) {
  const { node, problems, current } = data;
  return (
    <div
      className={`node-card${selected ? ' selected' : ''}${problems.length ? ' invalid' : ''}${current ? ' current' : ''}`}
      title={problems.join('\n')}
    >
      <Handle type="target" position={Position.Top} />
      <div className="node-type">
        {node.type}
        {node.data.isStart ? ' · start' : ''}
        {node.data.isGlobal ? ' · global' : ''}
      </div>
      <div className="node-name">{node.data.name || <em>unnamed</em>}</div>
      {problems.length > 0 && (
        <div className="node-problem" role="note">
          {problems.length === 1 ? problems[0] : `${problems.length} problems`}
        </div>
      )}
      <Handle type="source" position={Position.Bottom} />
    </div>
  );
}
const nodeTypes = { card: NodeCard };

/** Nodes and edges added, removed or changed between two graphs (by id). */
function diff(before: Graph, after: Graph): string[] {
  const lines: string[] = [];
  const compare = <T extends { id: string }>(kind: string, a: T[], b: T[], name: (item: T) => string) => {
    const old = new Map(a.map((item) => [item.id, item]));
    const now = new Map(b.map((item) => [item.id, item]));
    for (const [id, item] of now)
      if (!old.has(id)) lines.push(`+ ${kind} ${name(item)}`);
      else if (JSON.stringify({ ...old.get(id), position: 0 }) !== JSON.stringify({ ...item, position: 0 }))
        lines.push(`~ ${kind} ${name(item)} changed`);
    for (const [id, item] of old) if (!now.has(id)) lines.push(`- ${kind} ${name(item)}`);
  };
  compare('node', before.nodes, after.nodes, (n) => `"${n.data.name}"`);
  compare('edge', before.edges, after.edges, (e) => `"${e.label}"`);
  return lines;
}

const UNSAVED = 'This pathway has unsaved changes. Leave the page and lose them?';

/**
 * Asks before the user leaves the page while `unsaved`: a link or Back within the dashboard or
 * signing out (a confirm), a reload or closing the tab (the browser's own prompt).
 */
function useLeaveWarning(unsaved: boolean) {
  useUnsavedWork(unsaved, UNSAVED);
  const blocker = useBlocker(
    ({ currentLocation, nextLocation }) => unsaved && currentLocation.pathname !== nextLocation.pathname,
  );
  useEffect(() => {
    if (blocker.state !== 'blocked') return;
    if (window.confirm(UNSAVED)) blocker.proceed();
    else blocker.reset();
  }, [blocker]);
  useEffect(() => {
    if (!unsaved) return;
    const warn = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [unsaved]);
}

/** The pathway editor: canvas, the selected node's or edge's fields, versions, and a chat that runs it. */
export function PathwayPage() {
  const { id = '' } = useParams();
  const queries = useQueryClient();
  const pathway = useQuery({ queryKey: ['pathway', id], queryFn: () => api<PathwayDetail>(`/v1/pathway/${id}`) });
  useTitle(pathway.data && `Pathway ${pathway.data.name}`);
  const [graph, setGraph] = useState<Graph | null>(null);
  const [dirty, setDirty] = useState(false);
  const [selection, setSelection] = useState<Selection>(null);
  const [currentNode, setCurrentNode] = useState<string | null>(null);
  const canvas = useRef<HTMLDivElement>(null);
  const flow = useRef<ReactFlowInstance<Node<CardData>> | null>(null);
  useLeaveWarning(dirty);
  useEffect(() => {
    if (pathway.data && !graph) setGraph(toGraph(pathway.data));
  }, [pathway.data, graph]);

  // The server's own graph rules, run as the user edits: problems show on their nodes before saving.
  const { problems, marked } = useMemo(() => {
    if (!graph) return { problems: [], marked: new Map<string, string[]>() };
    const check = checkPathwayGraph(graph.nodes, graph.edges, { requireNodes: true });
    const list = check.ok ? [] : check.errors;
    return { problems: list.map((p) => describeProblem(p, graph)), marked: problemsById(graph, list) };
  }, [graph]);

  const save = useMutation({
    mutationFn: () => api(`/v1/pathway/${id}`, { method: 'POST', body: graph && hosted(graph) }),
    onSuccess: () => {
      setDirty(false);
      void queries.invalidateQueries({ queryKey: ['pathway', id] });
    },
  });

  if (pathway.isPending || (!graph && !pathway.error)) return <Loading what="the pathway" />;
  if (!graph) return <Problem error={pathway.error} />;

  const change = (next: Graph) => {
    setGraph(next);
    setDirty(true);
  };
  const auto = layout(graph);
  const flowNodes: Node<CardData>[] = graph.nodes.map((node) => ({
    id: node.id,
    type: 'card',
    position: positionOf(node, auto),
    selected: selection?.kind === 'node' && selection.id === node.id,
    data: { node, problems: marked.get(node.id) ?? [], current: node.id === currentNode },
  }));
  const flowEdges: Edge[] = graph.edges.map((edge) => ({
    id: edge.id,
    source: edge.source,
    target: edge.target,
    label: edge.label,
    selected: selection?.kind === 'edge' && selection.id === edge.id,
    className: marked.has(edge.id) ? 'invalid' : undefined,
  }));
  const onNodesChange = (changes: NodeChange<Node<CardData>>[]) => {
    const moved = new Map<string, { x: number; y: number }>();
    for (const c of changes) if (c.type === 'position' && c.position) moved.set(c.id, c.position);
    // Enter or Space on a node the keyboard focused selects it, as a click does.
    for (const c of changes) if (c.type === 'select' && c.selected) setSelection({ kind: 'node', id: c.id });
    if (moved.size > 0)
      change({
        ...graph,
        nodes: graph.nodes.map((n) => (moved.has(n.id) ? { ...n, position: moved.get(n.id) } : n)),
      });
  };
  const onEdgesChange = (changes: EdgeChange<Edge>[]) => {
    for (const c of changes) if (c.type === 'select' && c.selected) setSelection({ kind: 'edge', id: c.id });
  };
  /** A new path from `source` to `target` (dragged between handles, or Add path), selected to be described. */
  const connect = (source: string, target: string) => {
    const edge: PathwayEdge = {
      id: `edge-${crypto.randomUUID().slice(0, 8)}`,
      source,
      target,
      label: 'describe when to take this path',
    };
    change({ ...graph, edges: [...graph.edges, edge] });
    setSelection({ kind: 'edge', id: edge.id });
  };
  const addNode = () => {
    let n = graph.nodes.length + 1;
    while (graph.nodes.some((node) => node.id === `node-${n}`)) n++;
    const node: PathwayNode = {
      id: `node-${n}`,
      type: 'Default',
      // A pathway's first node is its start node, where calls begin.
      data: { name: `Node ${n}`, text: '', ...(graph.nodes.length === 0 && { isStart: true }) },
      position: placeForNewNode(),
    };
    change({ ...graph, nodes: [...graph.nodes, node] });
    setSelection({ kind: 'node', id: node.id });
  };
  // In the part of the canvas on screen; when it has no room, below everything, and the canvas
  // moves to show it.
  const placeForNewNode = (): Point => {
    const box = canvas.current?.getBoundingClientRect();
    const instance = flow.current;
    const taken = flowNodes.map((f) => {
      const measured = instance?.getNode(f.id)?.measured;
      return { ...f.position, width: measured?.width ?? CARD.width, height: measured?.height ?? CARD.height };
    });
    if (box && instance) {
      const topLeft = instance.screenToFlowPosition({ x: box.left, y: box.top });
      const bottomRight = instance.screenToFlowPosition({ x: box.right, y: box.bottom });
      const place = freePlace({ left: topLeft.x, top: topLeft.y, right: bottomRight.x, bottom: bottomRight.y }, taken);
      if (place) return place;
    }
    const below = { x: 0, y: Math.max(-ROW, ...taken.map((p) => p.y)) + ROW };
    void instance?.setCenter(below.x + CARD.width / 2, below.y + CARD.height / 2, {
      zoom: instance.getZoom(),
      duration: 200,
    });
    return below;
  };
  const selectedNode = selection?.kind === 'node' ? graph.nodes.find((n) => n.id === selection.id) : undefined;
  const selectedEdge = selection?.kind === 'edge' ? graph.edges.find((e) => e.id === selection.id) : undefined;

  return (
    <section className="pathway">
      <div className="page-head">
        <h1>{pathway.data?.name ?? 'Pathway'}</h1>
        <div className="actions">
          <button type="button" className="secondary" onClick={addNode}>
            Add node
          </button>
          <button type="button" onClick={() => save.mutate()} disabled={!dirty || save.isPending}>
            {dirty ? 'Save draft' : 'Draft saved'}
          </button>
        </div>
      </div>
      <Problem error={save.error} describe={(line) => describeProblem(line, graph, graph.globals.length)} />
      {graph?.nodes.length === 0 ? (
        <p className="empty">No nodes yet: add one with Add node. The first is the start node, where calls begin.</p>
      ) : (
        problems.length > 0 && (
          <details className="problems" open>
            <summary>
              {problems.length} problem{problems.length === 1 ? '' : 's'} to fix before calls can use this draft
            </summary>
            <ul>
              {problems.map((p) => (
                <li key={p}>{p}</li>
              ))}
            </ul>
          </details>
        )
      )}
      <div className="editor-body">
        <div className="canvas" aria-label="Pathway canvas" ref={canvas}>
          <ReactFlow
            nodes={flowNodes}
            edges={flowEdges}
            nodeTypes={nodeTypes}
            onNodesChange={onNodesChange}
            onNodeClick={(_e, node) => setSelection({ kind: 'node', id: node.id })}
            onEdgeClick={(_e, edge) => setSelection({ kind: 'edge', id: edge.id })}
            onPaneClick={() => setSelection(null)}
            onEdgesChange={onEdgesChange}
            onConnect={(connection) => {
              if (connection.source && connection.target) connect(connection.source, connection.target);
            }}
            onInit={(instance) => (flow.current = instance)}
            // A small pathway is shown at its size, not blown up to fill the canvas.
            fitView
            fitViewOptions={{ maxZoom: 1 }}
            deleteKeyCode={null}
          >
            <Background />
            <Controls />
          </ReactFlow>
        </div>
        <aside className="inspector">
          {selectedNode ? (
            <NodeFields
              key={selectedNode.id}
              node={selectedNode}
              problems={marked.get(selectedNode.id) ?? []}
              others={graph.nodes.filter((n) => n.id !== selectedNode.id)}
              onAddPath={(target) => connect(selectedNode.id, target)}
              onChange={(node) => change({ ...graph, nodes: graph.nodes.map((n) => (n.id === node.id ? node : n)) })}
              onDelete={() => {
                change({
                  ...graph,
                  nodes: graph.nodes.filter((n) => n.id !== selectedNode.id),
                  edges: graph.edges.filter((e) => e.source !== selectedNode.id && e.target !== selectedNode.id),
                });
                setSelection(null);
              }}
            />
          ) : selectedEdge ? (
            <EdgeFields
              key={selectedEdge.id}
              edge={selectedEdge}
              problems={marked.get(selectedEdge.id) ?? []}
              onChange={(edge) => change({ ...graph, edges: graph.edges.map((e) => (e.id === edge.id ? edge : e)) })}
              onDelete={() => {
                change({ ...graph, edges: graph.edges.filter((e) => e.id !== selectedEdge.id) });
                setSelection(null);
              }}
            />
          ) : (
            <p className="muted">
              Select a node or a path to edit it (or Tab to it and press Enter). Drag from a node's bottom handle to
              another node to add a path, or use Add path in a node's fields.
            </p>
          )}
        </aside>
      </div>
      <div className="two-columns">
        <Versions pathwayId={id} draft={graph} />
        <Chat pathwayId={id} dirty={dirty} onNode={setCurrentNode} />
      </div>
    </section>
  );
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Fields every node shows with inputs of its own. */
const FORM_FIELDS = ['name', 'text', 'prompt', 'isStart', 'isGlobal', 'globalLabel', 'extractVars', 'condition'];

interface TypedField {
  name: string;
  label: string;
  hint?: string;
  multiline?: boolean;
  options?: string[];
}

/** The fields of each node type beyond the common ones (src/domain/pathway-graph.ts checks them). */
const TYPE_FIELDS: Partial<Record<PathwayNode['type'], TypedField[]>> = {
  'Knowledge Base': [{ name: 'kb', label: 'Knowledge', hint: 'What the agent knows at this node', multiline: true }],
  'Transfer Call': [{ name: 'transferNumber', label: 'Transfer number', hint: 'E.164, e.g. +14155550123' }],
  // The body (text or JSON), headers and response mapping are edited with the other fields.
  Webhook: [
    { name: 'url', label: 'URL' },
    { name: 'method', label: 'Method', options: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] },
  ],
  'Press Button': [
    { name: 'digit', label: 'Key', hint: 'One key to press' },
    { name: 'sequence', label: 'Keys', hint: 'Or several, e.g. 1234#' },
  ],
  SMS: [
    { name: 'smsBody', label: 'Message', multiline: true },
    { name: 'phoneNumber', label: 'To number', hint: "Default: the caller's number" },
  ],
  'Transfer Pathway': [
    { name: 'transferPathway', label: 'Pathway ID' },
    { name: 'transferPathwayNode', label: 'Start at node' },
  ],
};

function NodeFields({
  node,
  problems,
  others,
  onAddPath,
  onChange,
  onDelete,
}: {
  node: PathwayNode;
  problems: string[];
  /** The pathway's other nodes, that a path from this one can lead to. */
  others: PathwayNode[];
  onAddPath(target: string): void;
  onChange(node: PathwayNode): void;
  onDelete(): void;
}) {
  const [pathTarget, setPathTarget] = useState(others[0]?.id ?? '');
  const typed = TYPE_FIELDS[node.type] ?? [];
  // The fields with inputs of their own; the rest of the node's data is edited as JSON.
  const shown = new Set([...FORM_FIELDS, ...typed.map((f) => f.name)]);
  const { extractVars } = node.data;
  const rest = Object.fromEntries(Object.entries(node.data).filter(([key]) => !shown.has(key)));
  const { name, text, prompt, isStart, isGlobal, globalLabel } = node.data;
  const [extra, setExtra] = useState(JSON.stringify(rest, null, 2));
  const [vars, setVars] = useState(extractVars === undefined ? '' : JSON.stringify(extractVars, null, 2));
  const [jsonProblem, setJsonProblem] = useState<string | null>(null);
  const data = (patch: Json) => onChange({ ...node, data: { ...node.data, ...patch } });
  const applyJson = (nextExtra: string, nextVars: string) => {
    try {
      const other = (parseJsonField('Other fields', nextExtra) ?? {}) as Json;
      const parsedVars = parseJsonField('Extract variables', nextVars);
      setJsonProblem(null);
      const kept = Object.fromEntries(
        Object.entries(node.data).filter(([key]) => shown.has(key) && key !== 'extractVars'),
      );
      onChange({
        ...node,
        data: {
          ...kept,
          name: str(name),
          ...other,
          ...(parsedVars !== undefined && { extractVars: parsedVars }),
        },
      });
    } catch (error) {
      setJsonProblem((error as Error).message);
    }
  };
  return (
    <form className="fields" onSubmit={(e: FormEvent) => e.preventDefault()} aria-label="Node">
      <h2>Node</h2>
      {problems.length > 0 && (
        <ul className="problem" role="alert">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      <Field label="Name">
        <input value={str(name)} onChange={(e) => data({ name: e.target.value })} />
      </Field>
      <Field label="Type">
        <select value={node.type} onChange={(e) => onChange({ ...node, type: e.target.value as PathwayNode['type'] })}>
          {NODE_TYPES.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
      </Field>
      <Field label="Text" hint="Said as written (or use a prompt)">
        <textarea rows={3} value={str(text)} onChange={(e) => data({ text: e.target.value })} />
      </Field>
      <Field label="Prompt" hint="What the agent should say, in its own words">
        <textarea rows={3} value={str(prompt)} onChange={(e) => data({ prompt: e.target.value })} />
      </Field>
      <Field label="Condition" hint="The node is kept until this is met">
        <input value={str(node.data.condition)} onChange={(e) => data({ condition: e.target.value })} />
      </Field>
      {typed.map((field) => (
        <Field key={field.name} label={field.label} {...(field.hint && { hint: field.hint })}>
          {field.options ? (
            <select value={str(node.data[field.name])} onChange={(e) => data({ [field.name]: e.target.value })}>
              <option value="">—</option>
              {field.options.map((o) => (
                <option key={o}>{o}</option>
              ))}
            </select>
          ) : field.multiline ? (
            <textarea
              rows={3}
              value={str(node.data[field.name])}
              onChange={(e) => data({ [field.name]: e.target.value })}
            />
          ) : (
            <input value={str(node.data[field.name])} onChange={(e) => data({ [field.name]: e.target.value })} />
          )}
        </Field>
      ))}
      <label className="check">
        <input type="checkbox" checked={isStart === true} onChange={(e) => data({ isStart: e.target.checked })} /> Start
        node
      </label>
      <label className="check">
        <input type="checkbox" checked={isGlobal === true} onChange={(e) => data({ isGlobal: e.target.checked })} />{' '}
        Global node
      </label>
      {isGlobal === true && (
        <Field label="Global label" hint="When the caller says this, the call jumps here">
          <input value={str(globalLabel)} onChange={(e) => data({ globalLabel: e.target.value })} />
        </Field>
      )}
      <JsonArea
        label="Extract variables"
        rows={3}
        value={vars}
        onChange={(t) => {
          setVars(t);
          applyJson(extra, t);
        }}
      />
      <JsonArea
        label="Other fields (JSON)"
        rows={5}
        value={extra}
        onChange={(t) => {
          setExtra(t);
          applyJson(t, vars);
        }}
      />
      {jsonProblem && <p className="problem-text">{jsonProblem}</p>}
      {others.length > 0 && (
        <div className="add-path">
          <Field label="Add a path to">
            <select value={pathTarget} onChange={(e) => setPathTarget(e.target.value)}>
              {others.map((n) => (
                <option key={n.id} value={n.id}>
                  {str(n.data.name) || n.id}
                </option>
              ))}
            </select>
          </Field>
          <button
            type="button"
            className="secondary"
            onClick={() => onAddPath(others.some((n) => n.id === pathTarget) ? pathTarget : others[0]!.id)}
          >
            Add path
          </button>
        </div>
      )}
      <button type="button" className="danger" onClick={onDelete}>
        Delete node
      </button>
    </form>
  );
}

function EdgeFields({
  edge,
  problems,
  onChange,
  onDelete,
}: {
  edge: PathwayEdge;
  problems: string[];
  onChange(edge: PathwayEdge): void;
  onDelete(): void;
}) {
  const [conditions, setConditions] = useState(edge.conditions ? JSON.stringify(edge.conditions, null, 2) : '');
  const [jsonProblem, setJsonProblem] = useState<string | null>(null);
  return (
    <form className="fields" onSubmit={(e: FormEvent) => e.preventDefault()} aria-label="Path">
      <h2>Path</h2>
      {problems.length > 0 && (
        <ul className="problem" role="alert">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      <Field label="Label" hint="What the agent reads to choose this path">
        <input value={edge.label} onChange={(e) => onChange({ ...edge, label: e.target.value })} />
      </Field>
      <Field label="Description">
        <textarea
          rows={2}
          value={edge.description ?? ''}
          onChange={(e) => onChange({ ...edge, description: e.target.value })}
        />
      </Field>
      <JsonArea
        label="Conditions"
        rows={4}
        value={conditions}
        onChange={(t) => {
          setConditions(t);
          try {
            const parsed = parseJsonField('Conditions', t);
            setJsonProblem(null);
            const { conditions: _old, ...rest } = edge;
            onChange(parsed === undefined ? rest : { ...rest, conditions: parsed as PathwayEdge['conditions'] });
          } catch (error) {
            setJsonProblem((error as Error).message);
          }
        }}
      />
      {jsonProblem && <p className="problem-text">{jsonProblem}</p>}
      <button type="button" className="danger" onClick={onDelete}>
        Delete path
      </button>
    </form>
  );
}

function Versions({ pathwayId, draft }: { pathwayId: string; draft: Graph }) {
  const queries = useQueryClient();
  const versions = useQuery({
    queryKey: ['versions', pathwayId],
    queryFn: () => api<VersionSummary[]>(`/v1/pathway/${pathwayId}/versions`),
  });
  const [name, setName] = useState('');
  const [compared, setCompared] = useState<{ n: number; lines: string[] } | null>(null);
  const refresh = () => {
    void queries.invalidateQueries({ queryKey: ['versions', pathwayId] });
    void queries.invalidateQueries({ queryKey: ['pathways'] });
  };
  const create = useMutation({
    mutationFn: () =>
      api(`/v1/pathway/${pathwayId}/version`, {
        method: 'POST',
        body: { name: name || `Version ${(versions.data?.length ?? 0) + 1}`, ...hosted(draft) },
      }),
    onSuccess: () => {
      setName('');
      refresh();
    },
  });
  const publish = useMutation({
    mutationFn: ({ n, environment }: { n: number; environment: string }) =>
      api(`/v1/pathway/${pathwayId}/publish`, { method: 'POST', body: { version_id: n, environment } }),
    onSuccess: refresh,
  });
  const compare = useMutation({
    mutationFn: async (n: number) => {
      const version = await api<VersionDetail>(`/v1/pathway/${pathwayId}/version/${n}`);
      return { n, lines: diff(toGraph(version), draft) };
    },
    onSuccess: setCompared,
  });
  return (
    <div className="panel">
      <h2>Versions</h2>
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <Field label="Version name">
          <input value={name} onChange={(e) => setName(e.target.value)} placeholder="optional" />
        </Field>
        <button type="submit" disabled={create.isPending}>
          Save as version
        </button>
      </form>
      <Problem error={create.error ?? publish.error ?? compare.error ?? versions.error} />
      {versions.data?.length === 0 && <p className="muted">No versions yet: calls use the draft.</p>}
      <ul className="versions">
        {versions.data?.map((v) => (
          <li key={v.id}>
            <strong>
              {v.version_number}. {v.name}
            </strong>{' '}
            {v.is_production && <span className="badge badge-production">production</span>}
            {v.is_staging && <span className="badge badge-staging">staging</span>}
            <div className="actions">
              {!v.is_production && (
                <button
                  type="button"
                  className="secondary"
                  onClick={() => publish.mutate({ n: v.version_number, environment: 'production' })}
                >
                  Publish to production
                </button>
              )}
              {!v.is_staging && (
                <button
                  type="button"
                  className="secondary"
                  onClick={() => publish.mutate({ n: v.version_number, environment: 'staging' })}
                >
                  Publish to staging
                </button>
              )}
              <button type="button" className="secondary" onClick={() => compare.mutate(v.version_number)}>
                Compare with draft
              </button>
            </div>
          </li>
        ))}
      </ul>
      {compared && (
        <div>
          <h3>Version {compared.n} → draft</h3>
          {compared.lines.length === 0 ? (
            <p className="muted">The draft is the same as this version.</p>
          ) : (
            <pre className="diff">{compared.lines.join('\n')}</pre>
          )}
        </div>
      )}
    </div>
  );
}

/** Runs the pathway (as calls would: production version, else the saved draft) as a text conversation. */
function Chat({ pathwayId, dirty, onNode }: { pathwayId: string; dirty: boolean; onNode(id: string | null): void }) {
  const [chat, setChat] = useState<ChatTurnResult | null>(null);
  const [message, setMessage] = useState('');
  const [variables, setVariables] = useState('');
  const start = useMutation({
    mutationFn: async () => {
      const requestData = parseJsonField('Variables', variables);
      const created = await api<{ data: { chat_id: string } }>('/v1/pathway/chat/create', {
        method: 'POST',
        body: { pathway_id: pathwayId, ...(requestData !== undefined && { request_data: requestData }) },
      });
      return (await api<{ data: ChatTurnResult }>(`/v1/pathway/chat/${created.data.chat_id}`, { method: 'POST' })).data;
    },
    onSuccess: (data) => {
      setChat(data);
      onNode(data.current_node_id);
    },
  });
  const send = useMutation({
    mutationFn: async (text: string) =>
      (
        await api<{ data: ChatTurnResult }>(`/v1/pathway/chat/${chat!.chat_id}`, {
          method: 'POST',
          body: { message: text },
        })
      ).data,
    onSuccess: (data) => {
      setChat(data);
      setMessage('');
      onNode(data.current_node_id);
    },
  });
  return (
    <div className="panel chat">
      <h2>Chat with this pathway</h2>
      {dirty && <p className="muted">Save the draft first: the chat runs what is saved.</p>}
      <JsonArea label="Variables (request_data)" rows={2} value={variables} onChange={setVariables} />
      <button type="button" className="secondary" onClick={() => start.mutate()} disabled={start.isPending}>
        {chat ? 'Restart chat' : 'Start chat'}
      </button>
      <Problem error={start.error ?? send.error} />
      {chat && (
        <>
          <ol className="timeline" aria-label="Chat" aria-live="polite">
            {chat.chat_history.map((line, i) => (
              <li key={i} className={`line line-${line.role}`}>
                <span className="who">
                  {line.role === 'user' ? 'You' : line.role === 'assistant' ? 'Agent' : 'Action'}
                </span>
                <span className="said">{line.content}</span>
              </li>
            ))}
          </ol>
          <p>
            Current node: <strong>{chat.current_node_name ?? '—'}</strong>
            {chat.ended && ' (the conversation has ended)'}
          </p>
          <form
            className="inline-form"
            onSubmit={(e) => {
              e.preventDefault();
              if (message.trim()) send.mutate(message);
            }}
          >
            <Field label="Message">
              <input value={message} onChange={(e) => setMessage(e.target.value)} disabled={chat.ended} />
            </Field>
            <button type="submit" disabled={chat.ended || send.isPending}>
              Send
            </button>
          </form>
          <details>
            <summary>Variables and steps</summary>
            <pre className="json">{JSON.stringify(chat.variables, null, 2)}</pre>
            <PathwaySteps steps={chat.pathway_logs} />
          </details>
        </>
      )}
    </div>
  );
}
