import { JSONParser } from '@streamparser/json';
import sjson from 'secure-json-parse';
import { ApiError } from '../errors.js';
import { slicer } from '../slices.js';

/** How deeply a request body may nest arrays and objects (the API's own bodies nest under 10). */
export const MAX_JSON_DEPTH = 64;

/**
 * Bodies over this size are parsed in slices: JSON.parse holds the event loop about 15 ms a
 * megabyte, and campaign bodies may reach 16 MB.
 */
export const SLICED_PARSE_BYTES = 256 * 1024;

const CHUNK_CHARS = 32 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * Follows the nesting of JSON text fed to it in pieces, so that a body nested too deeply is refused
 * before it is parsed: JSON.parse takes seconds over a few megabytes of `[[[[...` and builds
 * millions of arrays nobody needs.
 */
export class NestingScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  constructor(private readonly limit = MAX_JSON_DEPTH) {}

  /** Reads the next piece; false once the nesting went over the limit. */
  feed(text: string): boolean {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.escaped) this.escaped = false;
      else if (this.inString) {
        if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) this.inString = false;
      } else if (c === QUOTE) this.inString = true;
      else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (++this.depth > this.limit) return false;
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) this.depth--;
    }
    return true;
  }
}

const tooDeep = (): ApiError =>
  new ApiError('INVALID_JSON', `Request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
const invalid = (): ApiError => new ApiError('INVALID_JSON', 'Request body is not valid JSON');
const poisoned = (): ApiError =>
  new ApiError('INVALID_JSON', 'Request body has a "__proto__" or "constructor" key, which a large body may not have');

/**
 * A `__proto__` or `constructor` key, also written with escapes. Small bodies are checked exactly
 * (secure-json-parse: only `constructor.prototype` is refused); a large one holding either key
 * at all is refused, since walking millions of values for it would hold the event loop.
 */
const POISON =
  /"(?:_|\\u005[Ff]){2}(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff]){2}"\s*:|"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

/**
 * Parses a JSON request body, refusing deep nesting and prototype poisoning (`__proto__` and
 * `constructor.prototype` keys) as Fastify's own parser does. A large body is parsed in slices,
 * letting every other request and call run in between.
 */
export async function parseJsonBody(text: string): Promise<unknown> {
  if (text.trim() === '') return {};
  const scanner = new NestingScanner();
  if (text.length <= SLICED_PARSE_BYTES) {
    if (!scanner.feed(text)) throw tooDeep();
    try {
      // Such keys are dropped, as every field a route does not know is ignored (CONTRACT.md 4).
      return sjson.parse(text, null, { protoAction: 'remove', constructorAction: 'remove' });
    } catch {
      throw invalid();
    }
  }
  const parser = new JSONParser({ paths: ['$'], keepStack: false });
  let result: unknown;
  let failure: unknown;
  parser.onValue = ({ value }) => {
    result = value;
  };
  parser.onError = (error) => {
    failure = error;
  };
  const slice = slicer();
  for (let at = 0; at < text.length; at += CHUNK_CHARS) {
    await slice();
    const chunk = text.slice(at, at + CHUNK_CHARS);
    if (!scanner.feed(chunk)) throw tooDeep();
    // The key may straddle two chunks: look at the end of the previous one too.
    if (POISON.test(text.slice(Math.max(0, at - 64), at + CHUNK_CHARS))) throw poisoned();
    // Text after the value (other than white space) is an error, as for JSON.parse.
    if (parser.isEnded) {
      if (chunk.trim() !== '') throw invalid();
      continue;
    }
    parser.write(chunk);
    if (failure) throw invalid();
  }
  if (!parser.isEnded) parser.end();
  if (failure || result === undefined) throw invalid();
  return result;
}
