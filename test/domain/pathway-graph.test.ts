import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  NODE_TYPES,
  canonicalNodeType,
  checkPathwayGraph,
  isKnownNodeType,
  splitGraphNodes,
  startNodeId,
  type PathwayNode,
} from '../../src/domain/pathway-graph.js';

type Node = Record<string, unknown> & { data?: unknown };

const start: Node = { id: 'start', type: 'Default', data: { name: 'Greet', text: 'Hello!', isStart: true } };
const end: Node = { id: 'end', type: 'End Call', data: { name: 'Bye', text: 'Goodbye' } };
const edge = { id: 'e1', source: 'start', target: 'end', label: 'done' };

/** A valid graph with one extra node (and an edge to it) whose data is `data`. */
function withNode(type: string, data: Record<string, unknown>): { nodes: Node[]; edges: unknown[] } {
  return {
    nodes: [start, end, { id: 'x', type, data: { name: 'X', ...data } }],
    edges: [edge, { id: 'e2', source: 'start', target: 'x', label: 'to x' }],
  };
}

function errorsOf(nodes: unknown, edges: unknown, requireNodes = false): string[] {
  const result = checkPathwayGraph(nodes, edges, { requireNodes });
  return result.ok ? [] : result.errors;
}

describe('pathway graph: valid graphs', () => {
  const cases: [string, { nodes: Node[]; edges: unknown[] }][] = [
    ['start and end', { nodes: [start, end], edges: [edge] }],
    ['Default with prompt instead of text', withNode('Default', { prompt: 'Ask for the name' })],
    ['Transfer Call', withNode('Transfer Call', { transferNumber: '+14155550110' })],
    ['Transfer Call, 10 digits', withNode('Transfer Call', { transferNumber: '(415) 555-0110' })],
    ['Webhook', withNode('Webhook', { url: 'https://api.example.com/hook', method: 'post' })],
    ['Webhook without method', withNode('Webhook', { url: 'http://localhost:3000/x' })],
    ['Press Button digit', withNode('Press Button', { digit: '1' })],
    ['Press Button digit as number', withNode('Press Button', { digit: 0 })],
    ['Press Button sequence', withNode('Press Button', { sequence: '12w#*' })],
    ['SMS', withNode('SMS', { smsBody: 'Your code', phoneNumber: '+14155550100' })],
    ['Transfer Pathway', withNode('Transfer Pathway', { transferPathway: 'p-123' })],
    ['Knowledge Base kb', withNode('Knowledge Base', { kb: 'kb-1' })],
    ['Knowledge Base text', withNode('Knowledge Base', { text: 'Opening hours are 9-5' })],
    ['Custom Code', withNode('Custom Code', { code: 'return 1' })],
    ['Wait for Response', withNode('Wait for Response', {})],
    ['Scheduling', withNode('Scheduling', {})],
    ['global node', withNode('Default', { text: 'Sure', isGlobal: true, globalLabel: 'user asks for hours' })],
    [
      'extractVars and modelOptions',
      withNode('Default', {
        text: 'What is your age?',
        extractVars: [
          ['age', 'integer', 'The age'],
          ['ok', 'boolean', 'Agreed'],
        ],
        modelOptions: { temperature: 0.2 },
      }),
    ],
    ['snake_case type', withNode('end_call', {})],
    ['upper-case type with dashes', withNode('TRANSFER-CALL', { transferNumber: '+14155550110' })],
    ['camelCase type', withNode('waitForResponse', {})],
    ['self loop edge', { nodes: [start], edges: [{ id: 'l', source: 'start', target: 'start', label: 'again' }] }],
  ];
  for (const [name, graph] of cases) {
    it(name, () => assert.deepEqual(errorsOf(graph.nodes, graph.edges), []));
  }

  it('an empty draft is valid, an empty version is not', () => {
    assert.deepEqual(errorsOf([], []), []);
    assert.deepEqual(errorsOf([], [], true), ['nodes must have at least 1 item']);
  });

  it('returns canonical types and keeps unknown fields', () => {
    const result = checkPathwayGraph(
      [{ id: 'a', type: 'end call', position: { x: 1 }, data: { name: 'A', isStart: true, custom: [1] } }],
      [],
      { requireNodes: true },
    );
    assert.ok(result.ok);
    const [node] = splitGraphNodes(result.graph.nodes).nodes;
    assert.equal(node?.type, 'End Call');
    assert.deepEqual(node?.position, { x: 1 });
    assert.deepEqual(node?.data.custom, [1]);
  });
});

describe('pathway graph: every rule', () => {
  const cases: [string, unknown, unknown, string][] = [
    ['nodes not an array', { a: 1 }, [], 'nodes must be an array'],
    ['edges not an array', [start], 'x', 'edges must be an array'],
    ['node not an object', [start, 'n'], [], 'nodes[1] must be an object'],
    ['node id missing', [start, { type: 'Default', data: { name: 'A', text: 't' } }], [], 'nodes[1].id is required'],
    [
      'node id not a string',
      [start, { id: 3, type: 'Default', data: { name: 'A', text: 't' } }],
      [],
      'nodes[1].id must be a string',
    ],
    ['node id empty', [start, { ...end, id: '' }], [], 'nodes[1].id must not be empty'],
    ['duplicate node id', [start, end, { ...end }], [], 'nodes[2].id "end" is already used by nodes[1]'],
    ['type missing', [start, { id: 'a', data: { name: 'A' } }], [], 'nodes[1].type is required'],
    ['type not a string', [start, { id: 'a', type: 1, data: { name: 'A' } }], [], 'nodes[1].type must be a string'],
    [
      'unknown type',
      [start, { id: 'a', type: 'Teleport', data: { name: 'A' } }],
      [],
      'nodes[1].type "Teleport" is not a known node type',
    ],
    ['data missing', [start, { id: 'a', type: 'End Call' }], [], 'nodes[1].data is required'],
    ['data not an object', [start, { id: 'a', type: 'End Call', data: [] }], [], 'nodes[1].data must be an object'],
    ['name missing', [start, { id: 'a', type: 'End Call', data: {} }], [], 'nodes[1].data.name is required'],
    [
      'name not a string',
      [start, { id: 'a', type: 'End Call', data: { name: 5 } }],
      [],
      'nodes[1].data.name must be a string',
    ],
    [
      'name blank',
      [start, { id: 'a', type: 'End Call', data: { name: ' ' } }],
      [],
      'nodes[1].data.name must not be empty',
    ],
    [
      'isStart not boolean',
      [{ ...start, data: { name: 'S', text: 't', isStart: 'yes' } }],
      [],
      'nodes[0].data.isStart must be a boolean',
    ],
    ['no start node', [end], [], 'nodes must have exactly one start node (data.isStart true); none is marked'],
    [
      'two start nodes',
      [start, { ...end, data: { name: 'E', isStart: true } }],
      [],
      'nodes must have exactly one start node (data.isStart true); 2 are marked: nodes[0], nodes[1]',
    ],
    [
      'text not a string',
      [{ ...start, data: { name: 'S', text: 1, prompt: 'p', isStart: true } }],
      [],
      'nodes[0].data.text must be a string',
    ],
    [
      'Default without text or prompt',
      [{ ...start, data: { name: 'S', isStart: true } }],
      [],
      'nodes[0].data.text or nodes[0].data.prompt is required for a Default node',
    ],
    [
      'Transfer Call without number',
      withNode('Transfer Call', {}).nodes,
      [],
      'nodes[2].data.transferNumber is required for a Transfer Call node',
    ],
    [
      'Transfer Call with bad number',
      withNode('Transfer Call', { transferNumber: '14155550110' }).nodes,
      [],
      'nodes[2].data.transferNumber has 11 digits',
    ],
    [
      'Transfer Call with letters',
      withNode('Transfer Call', { transferNumber: 'call bob' }).nodes,
      [],
      'nodes[2].data.transferNumber must not contain letters',
    ],
    ['Webhook without url', withNode('Webhook', {}).nodes, [], 'nodes[2].data.url is required for a Webhook node'],
    [
      'Webhook with ftp url',
      withNode('Webhook', { url: 'ftp://x.example' }).nodes,
      [],
      'nodes[2].data.url must begin with http:// or https://',
    ],
    [
      'Webhook with bad url',
      withNode('Webhook', { url: 'not a url' }).nodes,
      [],
      'nodes[2].data.url must be a valid URL',
    ],
    [
      'Webhook with PUT',
      withNode('Webhook', { url: 'https://x.example', method: 'PUT' }).nodes,
      [],
      'nodes[2].data.method must be GET or POST',
    ],
    [
      'Press Button without keys',
      withNode('Press Button', {}).nodes,
      [],
      'nodes[2].data.digit or nodes[2].data.sequence is required',
    ],
    [
      'Press Button bad digit',
      withNode('Press Button', { digit: '12' }).nodes,
      [],
      'nodes[2].data.digit must be one key',
    ],
    [
      'Press Button bad sequence',
      withNode('Press Button', { sequence: '12a' }).nodes,
      [],
      'nodes[2].data.sequence must be keys',
    ],
    ['SMS without body', withNode('SMS', {}).nodes, [], 'nodes[2].data.smsBody is required for an SMS node'],
    ['SMS with empty body', withNode('SMS', { smsBody: '' }).nodes, [], 'nodes[2].data.smsBody must not be empty'],
    [
      'SMS with bad phone',
      withNode('SMS', { smsBody: 'hi', phoneNumber: '123' }).nodes,
      [],
      'nodes[2].data.phoneNumber ',
    ],
    [
      'Transfer Pathway without target',
      withNode('Transfer Pathway', {}).nodes,
      [],
      'nodes[2].data.transferPathway is required',
    ],
    [
      'Knowledge Base without kb',
      withNode('Knowledge Base', {}).nodes,
      [],
      'nodes[2].data.kb or nodes[2].data.text is required',
    ],
    [
      'global without label',
      withNode('Default', { text: 't', isGlobal: true }).nodes,
      [],
      'nodes[2].data.globalLabel is required for a global node',
    ],
    [
      'extractVars not an array',
      withNode('Default', { text: 't', extractVars: {} }).nodes,
      [],
      'nodes[2].data.extractVars must be an array',
    ],
    [
      'extractVars item too short',
      withNode('Default', { text: 't', extractVars: [['a', 'string']] }).nodes,
      [],
      'nodes[2].data.extractVars[0] must be an array [name, type, description]',
    ],
    [
      'extractVars bad type',
      withNode('Default', { text: 't', extractVars: [['a', 'date', 'd']] }).nodes,
      [],
      'nodes[2].data.extractVars[0][1] (the type) must be one of: string, integer, number, boolean',
    ],
    [
      'extractVars empty name',
      withNode('Default', { text: 't', extractVars: [['', 'string', 'd']] }).nodes,
      [],
      'nodes[2].data.extractVars[0][0] (the name)',
    ],
    [
      'extractVars description not a string',
      withNode('Default', { text: 't', extractVars: [['a', 'string', 1]] }).nodes,
      [],
      'nodes[2].data.extractVars[0][2] (the description)',
    ],
    [
      'modelOptions not an object',
      withNode('Default', { text: 't', modelOptions: 'fast' }).nodes,
      [],
      'nodes[2].data.modelOptions must be an object',
    ],
    ['edge not an object', [start, end], [1], 'edges[0] must be an object'],
    ['edge id missing', [start, end], [{ source: 'start', target: 'end', label: 'l' }], 'edges[0].id is required'],
    ['duplicate edge id', [start, end], [edge, { ...edge }], 'edges[1].id "e1" is already used by edges[0]'],
    ['edge source missing', [start, end], [{ id: 'e', target: 'end', label: 'l' }], 'edges[0].source is required'],
    ['edge source unknown', [start, end], [{ ...edge, source: 'n7' }], 'edges[0].source "n7" is not a node'],
    ['edge target unknown', [start, end], [{ ...edge, target: 'n9' }], 'edges[0].target "n9" is not a node'],
    ['edge target not a string', [start, end], [{ ...edge, target: 9 }], 'edges[0].target must be a string'],
    ['edge label missing', [start, end], [{ id: 'e', source: 'start', target: 'end' }], 'edges[0].label is required'],
    ['edge label empty', [start, end], [{ ...edge, label: '  ' }], 'edges[0].label must not be empty'],
    [
      'edge description not a string',
      [start, end],
      [{ ...edge, description: 3 }],
      'edges[0].description must be a string',
    ],
  ];
  for (const [name, nodes, edges, expected] of cases) {
    it(name, () => {
      const errors = errorsOf(nodes, edges);
      assert.ok(
        errors.some((e) => e.startsWith(expected)),
        `expected an error starting "${expected}", got ${JSON.stringify(errors)}`,
      );
    });
  }

  it('reports every problem at once', () => {
    const errors = errorsOf(
      [
        { id: 'a', type: 'Nope', data: {} },
        { id: 'a', type: 'Webhook', data: { name: 'W' } },
      ],
      [{ id: 'e', source: 'a', target: 'zz' }],
    );
    for (const expected of [
      'nodes[0].type "Nope" is not a known node type',
      'nodes[0].data.name is required',
      'nodes[1].id "a" is already used by nodes[0]',
      'nodes[1].data.url is required for a Webhook node',
      'nodes must have exactly one start node',
      'edges[0].target "zz" is not a node',
      'edges[0].label is required',
    ]) {
      assert.ok(
        errors.some((e) => e.startsWith(expected)),
        `${expected} missing from ${JSON.stringify(errors)}`,
      );
    }
  });
});

describe('pathway graph: helpers for the runner', () => {
  it('knows every type and its variants', () => {
    for (const type of NODE_TYPES) {
      assert.equal(canonicalNodeType(type), type);
      assert.equal(canonicalNodeType(type.toLowerCase().replace(/ /g, '_')), type);
      assert.ok(isKnownNodeType(type.toUpperCase()));
    }
    assert.equal(isKnownNodeType('Route'), false);
    assert.equal(isKnownNodeType(undefined), false);
  });

  it('finds the start node', () => {
    const nodes = [end, start] as unknown as PathwayNode[];
    assert.equal(startNodeId(nodes), 'start');
    assert.equal(startNodeId([end] as unknown as PathwayNode[]), undefined);
  });
});
