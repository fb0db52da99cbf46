import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { waitForCall, type TestApp } from '../../src/testing/harness.js';
import type { PathwayLogEntry } from '../../src/pathways/logs.js';

/** Shared by the pathway tests: loading the example library through the API, a loopback webhook server. */

export interface ExampleGraph {
  name: string;
  description: string;
  nodes: { id: string; type: string; data: Record<string, unknown> }[];
  edges: { id: string; source: string; target: string; label: string; [k: string]: unknown }[];
}

export function readExample(file: string): ExampleGraph {
  return JSON.parse(readFileSync(new URL(`../../examples/pathways/${file}`, import.meta.url), 'utf8')) as ExampleGraph;
}

/**
 * Loads an example as a user would: create, update the draft with nodes and edges, save a
 * version and publish it to production. `patch` edits the graph first (webhook URLs, pathway ids).
 */
export async function loadExample(
  t: TestApp,
  file: string,
  patch: (graph: ExampleGraph) => void = () => {},
  options: { publish?: boolean } = {},
): Promise<string> {
  const graph = readExample(file);
  patch(graph);
  const created = await t.request('POST', '/v1/pathway/create', { name: graph.name, description: graph.description });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const id = String(created.body.pathway_id);
  const updated = await t.request('POST', `/v1/pathway/${id}`, { nodes: graph.nodes, edges: graph.edges });
  assert.equal(updated.status, 200, JSON.stringify(updated.body));
  if (options.publish === false) return id;
  const version = await t.request('POST', `/v1/pathway/${id}/version`, {
    name: `${graph.name} v1`,
    nodes: graph.nodes,
    edges: graph.edges,
  });
  assert.equal(version.status, 200, JSON.stringify(version.body));
  const number = (version.body.data as { version_number: number }).version_number;
  const published = await t.request('POST', `/v1/pathway/${id}/publish`, {
    version_id: number,
    environment: 'production',
  });
  assert.equal(published.status, 200, JSON.stringify(published.body));
  return id;
}

export function node(graph: ExampleGraph, id: string): Record<string, unknown> {
  const found = graph.nodes.find((n) => n.id === id);
  assert.ok(found, `no node ${id}`);
  return found.data;
}

export interface FinishedCall {
  call: Record<string, unknown>;
  logs: PathwayLogEntry[];
  lines: string;
  /** node ids in step order, consecutive repeats kept. */
  path: string[];
}

export async function finished(t: TestApp, callId: string): Promise<FinishedCall> {
  let call: Record<string, unknown>;
  try {
    call = await waitForCall(t, callId);
  } catch (error) {
    // Show where the call was when it did not end.
    const now = (await t.request('GET', `/v1/calls/${callId}`)).body;
    const said = ((now.transcripts ?? []) as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`);
    throw new Error(`${(error as Error).message}\n${said.join('\n')}\n${String(now.pathway_logs)}`);
  }
  const logs = call.pathway_logs === null ? [] : (JSON.parse(String(call.pathway_logs)) as PathwayLogEntry[]);
  const lines = (call.transcripts as { user: string; text: string }[]).map((x) => `${x.user}: ${x.text}`).join('\n');
  return { call, logs, lines, path: logs.map((l) => l.node_id) };
}

export async function placeCall(t: TestApp, body: Record<string, unknown>): Promise<FinishedCall> {
  const r = await t.request('POST', '/v1/calls', body);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return finished(t, String(r.body.call_id));
}

/** Buys a sandbox number, points it at the pathway, and has `from`'s persona call it. */
export async function inboundCall(t: TestApp, pathwayId: string, from: string): Promise<FinishedCall> {
  const bought = await t.request('POST', '/v1/inbound/purchase', { area_code: '415' });
  assert.equal(bought.status, 200, JSON.stringify(bought.body));
  const number = String(bought.body.phone_number);
  const configured = await t.request('POST', `/v1/inbound/${encodeURIComponent(number)}`, { pathway_id: pathwayId });
  assert.equal(configured.status, 200, JSON.stringify(configured.body));
  const r = await t.request('POST', '/v1/sandbox/inbound', { from, to: number });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return finished(t, String(r.body.call_id));
}

/** The edges taken, in order (global jumps as `global:<node>`). */
export const edgesTaken = (logs: PathwayLogEntry[]): string[] =>
  logs.flatMap((l) => (l.chosen_edge && l.event !== 'entered' ? [l.chosen_edge.id] : []));

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A loopback HTTP server for Webhook nodes: records requests and answers with `reply`. */
export class WebhookServer {
  readonly received: Received[] = [];
  reply: (request: Received) => { status: number; body: unknown } = () => ({ status: 200, body: {} });
  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookServer> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const hook = new WebhookServer(server, `http://127.0.0.1:${port}`);
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const received: Received = {
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        hook.received.push(received);
        const { status, body } = hook.reply(received);
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      });
    });
    return hook;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
