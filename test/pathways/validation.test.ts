import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { checkPathwayGraph, edgeConditionsHold, NODE_TYPES, splitGraphNodes } from '../../src/domain/pathway-graph.js';
import { createTestApp, type TestApp } from '../../src/testing/harness.js';

type Json = Record<string, unknown>;
interface Graph {
  nodes: Json[];
  edges: Json[];
}

/** A valid graph to break one thing at a time. */
function base(): Graph {
  return {
    nodes: [
      { id: 'start', type: 'Default', data: { name: 'Start', isStart: true, text: 'Hello!' } },
      { id: 'end', type: 'End Call', data: { name: 'End' } },
    ],
    edges: [{ id: 'e1', source: 'start', target: 'end', label: 'done' }],
  };
}

const data = (g: Graph, i: number): Json => g.nodes[i]!.data as Json;
/** Adds a node of `type` with `fields` as its data (plus a name) at nodes[2]. */
const add =
  (type: string, fields: Json) =>
  (g: Graph): void => {
    g.nodes.push({ id: 'x', type, data: { name: 'X', ...fields } });
  };

const KNOWN = NODE_TYPES.join(', ');
const URL_BODY = { url: 'https://example.com/hook' };

/** Every rule of the save checks: a change to the valid graph and the message that names what is wrong. */
const CASES: [string, (g: Graph) => void, string][] = [
  ['nodes not an array', (g) => ((g as unknown as Json).nodes = {}), 'nodes must be an array'],
  ['edges not an array', (g) => ((g as unknown as Json).edges = 'e1'), 'edges must be an array'],
  ['a node not an object', (g) => (g.nodes[1] = 'end' as unknown as Json), 'nodes[1] must be an object'],
  ['node id missing', (g) => delete g.nodes[1]!.id, 'nodes[1].id is required'],
  ['node id not a string', (g) => (g.nodes[1]!.id = 7), 'nodes[1].id must be a string'],
  ['node id empty', (g) => (g.nodes[1]!.id = ''), 'nodes[1].id must not be empty'],
  ['node ids unique', (g) => (g.nodes[1]!.id = 'start'), 'nodes[1].id "start" is already used by nodes[0]'],
  ['type missing', (g) => delete g.nodes[1]!.type, 'nodes[1].type is required'],
  ['type not a string', (g) => (g.nodes[1]!.type = 3), 'nodes[1].type must be a string'],
  ['unknown type', (g) => (g.nodes[1]!.type = 'Banana'), `nodes[1].type "Banana" is not a known node type (${KNOWN})`],
  ['data missing', (g) => delete g.nodes[1]!.data, 'nodes[1].data is required'],
  ['data not an object', (g) => (g.nodes[1]!.data = []), 'nodes[1].data must be an object'],
  ['name missing', (g) => delete data(g, 1).name, 'nodes[1].data.name is required'],
  ['name not a string', (g) => (data(g, 1).name = 1), 'nodes[1].data.name must be a string'],
  ['name empty', (g) => (data(g, 1).name = ' '), 'nodes[1].data.name must not be empty'],
  ['isStart not boolean', (g) => (data(g, 1).isStart = 'yes'), 'nodes[1].data.isStart must be a boolean'],
  ['isGlobal not boolean', (g) => (data(g, 1).isGlobal = 1), 'nodes[1].data.isGlobal must be a boolean'],
  ['isStatic not boolean', (g) => (data(g, 0).isStatic = 'true'), 'nodes[0].data.isStatic must be a boolean'],
  ['text not a string', (g) => (data(g, 1).text = 5), 'nodes[1].data.text must be a string'],
  ['prompt not a string', (g) => (data(g, 1).prompt = []), 'nodes[1].data.prompt must be a string'],
  ['condition not a string', (g) => (data(g, 1).condition = {}), 'nodes[1].data.condition must be a string'],
  ['globalPrompt not a string', (g) => (data(g, 0).globalPrompt = 1), 'nodes[0].data.globalPrompt must be a string'],
  [
    'global node without a label',
    (g) => (data(g, 1).isGlobal = true),
    'nodes[1].data.globalLabel is required for a global node (isGlobal true)',
  ],
  ['modelOptions not an object', (g) => (data(g, 0).modelOptions = 1), 'nodes[0].data.modelOptions must be an object'],
  [
    'temperature out of range',
    (g) => (data(g, 0).modelOptions = { temperature: 3 }),
    'nodes[0].data.modelOptions.temperature must be a number from 0 to 2',
  ],
  [
    'modelName empty',
    (g) => (data(g, 0).modelOptions = { modelName: '' }),
    'nodes[0].data.modelOptions.modelName must be a non-empty string',
  ],
  [
    'extractVars not an array',
    (g) => (data(g, 0).extractVars = 'name'),
    'nodes[0].data.extractVars must be an array of [name, type, description]',
  ],
  [
    'extractVars item not a triple',
    (g) => (data(g, 0).extractVars = [['name', 'string']]),
    'nodes[0].data.extractVars[0] must be an array [name, type, description]',
  ],
  [
    'extractVars name empty',
    (g) => (data(g, 0).extractVars = [['', 'string', 'x']]),
    'nodes[0].data.extractVars[0][0] (the name) must be a non-empty string',
  ],
  [
    'extractVars type unknown',
    (g) => (data(g, 0).extractVars = [['when', 'date', 'x']]),
    'nodes[0].data.extractVars[0][1] (the type) must be one of: string, integer, number, boolean',
  ],
  [
    'extractVars description not a string',
    (g) => (data(g, 0).extractVars = [['n', 'string', 1]]),
    'nodes[0].data.extractVars[0][2] (the description) must be a string',
  ],
  [
    'no start node',
    (g) => delete data(g, 0).isStart,
    'nodes must have exactly one start node (data.isStart true); none is marked',
  ],
  [
    'two start nodes',
    (g) => (data(g, 1).isStart = true),
    'nodes must have exactly one start node (data.isStart true); 2 are marked: nodes[0], nodes[1]',
  ],
  [
    'Default without text or prompt',
    (g) => delete data(g, 0).text,
    'nodes[0].data.text or nodes[0].data.prompt is required for a Default node',
  ],
  [
    'Knowledge Base without kb or text',
    add('Knowledge Base', {}),
    'nodes[2].data.kb or nodes[2].data.text is required for a Knowledge Base node',
  ],
  ['Knowledge Base kb not a string', add('Knowledge Base', { text: 'a', kb: 1 }), 'nodes[2].data.kb must be a string'],
  [
    'Transfer Call without a number',
    add('Transfer Call', {}),
    'nodes[2].data.transferNumber is required for a Transfer Call node',
  ],
  [
    'Transfer Call with a bad number',
    add('Transfer Call', { transferNumber: 'call me' }),
    'nodes[2].data.transferNumber must not contain letters or an extension',
  ],
  ['Webhook without a url', add('Webhook', {}), 'nodes[2].data.url is required for a Webhook node'],
  [
    'Webhook url not http',
    add('Webhook', { url: 'ftp://example.com' }),
    'nodes[2].data.url must begin with http:// or https://',
  ],
  ['Webhook url invalid', add('Webhook', { url: 'not a url' }), 'nodes[2].data.url must be a valid URL'],
  ['Webhook method', add('Webhook', { ...URL_BODY, method: 'PUT' }), 'nodes[2].data.method must be GET or POST'],
  [
    'Webhook headers',
    add('Webhook', { ...URL_BODY, headers: 'x' }),
    'nodes[2].data.headers must be an object or a list of [name, value] pairs',
  ],
  ['Webhook body', add('Webhook', { ...URL_BODY, body: 5 }), 'nodes[2].data.body must be an object or a string'],
  [
    'Webhook responseData',
    add('Webhook', { ...URL_BODY, responseData: [{ name: 'x' }] }),
    'nodes[2].data.responseData must be a list of {name, data} (data a JSON path) or an object of name: path',
  ],
  [
    'Webhook timeoutValue',
    add('Webhook', { ...URL_BODY, timeoutValue: 0 }),
    'nodes[2].data.timeoutValue must be a positive number of seconds',
  ],
  [
    'Webhook max_retries',
    add('Webhook', { ...URL_BODY, max_retries: 1.5 }),
    'nodes[2].data.max_retries must be a whole number, 0 or more',
  ],
  [
    'Press Button without keys',
    add('Press Button', {}),
    'nodes[2].data.digit or nodes[2].data.sequence is required for a Press Button node',
  ],
  ['Press Button digit', add('Press Button', { digit: 12 }), 'nodes[2].data.digit must be one key: 0-9, * or #'],
  [
    'Press Button sequence',
    add('Press Button', { sequence: '12x' }),
    'nodes[2].data.sequence must be keys 0-9, *, # and w (a pause)',
  ],
  ['SMS without a body', add('SMS', {}), 'nodes[2].data.smsBody is required for an SMS node'],
  ['SMS body not a string', add('SMS', { smsBody: 5 }), 'nodes[2].data.smsBody must be a string'],
  [
    'SMS number',
    add('SMS', { smsBody: 'hi', phoneNumber: '12' }),
    'nodes[2].data.phoneNumber must be in E.164 form (+ and country code) or 10 US digits',
  ],
  [
    'Transfer Pathway without a pathway',
    add('Transfer Pathway', {}),
    'nodes[2].data.transferPathway is required for a Transfer Pathway node',
  ],
  [
    'Transfer Pathway id not a string',
    add('Transfer Pathway', { transferPathway: 5 }),
    'nodes[2].data.transferPathway must be a string',
  ],
  [
    'Transfer Pathway node not a string',
    add('Transfer Pathway', { transferPathway: 'p', transferPathwayNode: 1 }),
    'nodes[2].data.transferPathwayNode must be a string',
  ],
  [
    'Transfer Pathway version',
    add('Transfer Pathway', { transferPathway: 'p', version: -1 }),
    'nodes[2].data.version must be a version number (0 = production)',
  ],
  ['an edge not an object', (g) => (g.edges[0] = 'e' as unknown as Json), 'edges[0] must be an object'],
  ['edge id missing', (g) => delete g.edges[0]!.id, 'edges[0].id is required'],
  ['edge id not a string', (g) => (g.edges[0]!.id = 1), 'edges[0].id must be a string'],
  ['edge id empty', (g) => (g.edges[0]!.id = ''), 'edges[0].id must not be empty'],
  ['edge ids unique', (g) => g.edges.push({ ...g.edges[0]! }), 'edges[1].id "e1" is already used by edges[0]'],
  ['edge source missing', (g) => delete g.edges[0]!.source, 'edges[0].source is required'],
  ['edge target not a string', (g) => (g.edges[0]!.target = 2), 'edges[0].target must be a string'],
  ['edge to a missing node', (g) => (g.edges[0]!.target = 'gone'), 'edges[0].target "gone" is not a node'],
  ['edge from a missing node', (g) => (g.edges[0]!.source = 'gone'), 'edges[0].source "gone" is not a node'],
  ['edge label missing', (g) => delete g.edges[0]!.label, 'edges[0].label is required'],
  ['edge label not a string', (g) => (g.edges[0]!.label = 1), 'edges[0].label must be a string'],
  ['edge label empty', (g) => (g.edges[0]!.label = ' '), 'edges[0].label must not be empty'],
  ['edge description', (g) => (g.edges[0]!.description = 1), 'edges[0].description must be a string'],
  [
    'edge conditions not an array',
    (g) => (g.edges[0]!.conditions = {}),
    'edges[0].conditions must be an array of {variable, operator, value}',
  ],
  [
    'edge condition not an object',
    (g) => (g.edges[0]!.conditions = ['x > 1']),
    'edges[0].conditions[0] must be an object {variable, operator, value}',
  ],
  [
    'edge condition variable',
    (g) => (g.edges[0]!.conditions = [{ operator: 'exists' }]),
    'edges[0].conditions[0].variable must be a non-empty string',
  ],
  [
    'edge condition operator',
    (g) => (g.edges[0]!.conditions = [{ variable: 'x', operator: '=>', value: 1 }]),
    'edges[0].conditions[0].operator must be one of: ==, !=, >, >=, <, <=, contains, exists, not_exists',
  ],
  [
    'edge condition value',
    (g) => (g.edges[0]!.conditions = [{ variable: 'x', operator: '>' }]),
    'edges[0].conditions[0].value is required for > (a string, number or boolean)',
  ],
];

describe('pathway checks on save: every rule, each error naming the node or edge field', () => {
  it('the valid base graph passes and comes back with canonical types', () => {
    const g = base();
    g.nodes[1]!.type = 'end_call';
    const r = checkPathwayGraph(g.nodes, g.edges, { requireNodes: true });
    assert.ok(r.ok);
    assert.equal(splitGraphNodes(r.graph.nodes).nodes[1]!.type, 'End Call');
  });

  for (const [title, change, expected] of CASES) {
    it(title, () => {
      const g = base();
      change(g);
      const r = checkPathwayGraph(g.nodes, g.edges, { requireNodes: true });
      assert.equal(r.ok, false, `${title}: accepted`);
      if (!r.ok)
        assert.ok(r.errors.includes(expected), `expected ${JSON.stringify(expected)} in ${JSON.stringify(r.errors)}`);
    });
  }

  it('a version needs a node; a draft may be empty', () => {
    const version = checkPathwayGraph([], [], { requireNodes: true });
    assert.deepEqual(version.ok ? [] : version.errors, ['nodes must have at least 1 item']);
    assert.equal(checkPathwayGraph([], [], { requireNodes: false }).ok, true);
  });

  it('edge conditions compare variables as numbers or text', () => {
    const vars = { bill: '180', owner: true, name: 'Lee Smith', empty: '' };
    const holds = (variable: string, operator: string, value?: unknown) =>
      edgeConditionsHold([{ variable, operator, value }], vars);
    assert.equal(holds('bill', '>=', 100), true);
    assert.equal(holds('bill', '<', 100), false);
    assert.equal(holds('bill', '==', '180'), true);
    assert.equal(holds('owner', '==', true), true);
    assert.equal(holds('owner', '!=', true), false);
    assert.equal(holds('name', 'contains', 'lee'), true);
    assert.equal(holds('name', '>', 3), false, 'text does not compare as a number');
    assert.equal(holds('empty', 'exists'), false);
    assert.equal(holds('missing', 'not_exists'), true);
    assert.equal(holds('missing', '==', 1), false);
    assert.equal(edgeConditionsHold(undefined, vars), true);
  });
});

describe('pathway checks through the API: 400 with every problem, never a 500', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  it('create, update and version answer 400 naming the fields', async () => {
    const g = base();
    data(g, 0).modelOptions = { temperature: 9 };
    g.edges[0]!.conditions = [{ variable: 'bill', operator: 'between' }];
    g.nodes.push({ id: 'x', type: 'Webhook', data: { name: 'Hook', url: 'https://example.com', responseData: 5 } });
    const expected = [
      'nodes[0].data.modelOptions.temperature must be a number from 0 to 2',
      'nodes[2].data.responseData must be a list of {name, data} (data a JSON path) or an object of name: path',
      'edges[0].conditions[0].operator must be one of: ==, !=, >, >=, <, <=, contains, exists, not_exists',
    ];
    const created = await t.request('POST', '/v1/pathway/create', { name: 'Bad', ...g });
    assert.equal(created.status, 400, JSON.stringify(created.body));
    assert.deepEqual(new Set(created.body.errors as string[]), new Set(expected));

    const ok = await t.request('POST', '/v1/pathway/create', { name: 'Good', ...base() });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    const id = String(ok.body.pathway_id);
    const updated = await t.request('POST', `/v1/pathway/${id}`, g);
    assert.equal(updated.status, 400);
    assert.deepEqual(new Set(updated.body.errors as string[]), new Set(expected));
    const version = await t.request('POST', `/v1/pathway/${id}/version`, { name: 'v', ...g });
    assert.equal(version.status, 400);
    assert.deepEqual(new Set(version.body.errors as string[]), new Set(expected));
  });
});
