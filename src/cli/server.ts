/** A running Openline server as the command line talks to it: its URL, an API key, one request at a time. */
import { CliError } from './commands.js';

export interface Connection {
  url: string;
  apiKey: string;
  /** How to point the command at another server, for the "cannot reach" message ("set --url or OPENLINE_URL"). */
  hint: string;
}

export interface ServerReply {
  status: number;
  body: Record<string, unknown>;
}

/** An http(s) URL without its trailing slashes, or undefined when `raw` is not one. */
export function serverUrl(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  return url.toString().replace(/\/+$/, '');
}

/** One request to the server; a connection failure or a refused key is a CliError that says what to do. */
export async function request(
  connection: Connection,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<ServerReply> {
  let response: Response;
  try {
    response = await fetch(`${connection.url}${path}`, {
      method,
      headers: {
        authorization: connection.apiKey,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
    throw new CliError(
      `Cannot reach the Openline server at ${connection.url}${cause} (is it running? ${connection.hint})`,
    );
  }
  const text = await response.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    parsed = { message: text.slice(0, 200) };
  }
  if (response.status === 401) {
    throw new CliError(`The server refused the API key (${String(parsed.message ?? 'unauthorized')})`);
  }
  return { status: response.status, body: parsed };
}
