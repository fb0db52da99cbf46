import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { formatValidationErrors } from './api/validation.js';
import { isStorageUnavailable } from './store/db.js';

/** Every error code Openline answers with, mapped to its HTTP status in this one place. */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  BAD_REQUEST: 400,
  INVALID_JSON: 400,
  UNKNOWN_ENCRYPTED_KEY: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  BAD_URL: 400,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  ROUTE_NOT_FOUND: 404,
  CALL_RECORDING_NOT_FOUND: 404,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  UNSUPPORTED_MEDIA_TYPE: 415,
  HEADERS_TOO_LARGE: 431,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  PROVIDER_UNAVAILABLE: 503,
  STORAGE_UNAVAILABLE: 503,
} as const;

/** Seconds a client is asked to wait before sending a request the database could not serve. */
const STORAGE_RETRY_AFTER_S = 5;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An error meant for the API caller: its message is safe to show. */
export class ApiError extends Error {
  readonly statusCode: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly errors?: string[],
    /** Extra top-level fields of the error body (e.g. failed_updates). */
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
    this.statusCode = ERROR_STATUS[code];
  }
}

export function validationError(
  errors: string[],
  message = 'Invalid request',
  extra?: Record<string, unknown>,
): ApiError {
  return new ApiError('VALIDATION_ERROR', message, errors, extra);
}

export function notFound(what: string): ApiError {
  return new ApiError('NOT_FOUND', `${what} not found`);
}

export function conflict(message: string): ApiError {
  return new ApiError('CONFLICT', message);
}

export interface ErrorBody {
  status: 'error';
  message: string;
  code: ErrorCode;
  errors?: string[];
  request_id?: string;
  [extra: string]: unknown;
}

function body(error: ApiError): ErrorBody {
  return {
    status: 'error',
    message: error.message,
    code: error.code,
    ...(error.errors ? { errors: error.errors } : {}),
    ...error.extra,
  };
}

/** Maps errors raised by Fastify itself (parsing, limits, schema validation) to ApiError. */
function fromFastify(error: FastifyError): ApiError | undefined {
  if (error.validation) {
    return validationError(formatValidationErrors(error.validation, error.validationContext));
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('PAYLOAD_TOO_LARGE', 'Request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('INVALID_JSON', 'Request body is empty but Content-Type is application/json');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('INVALID_JSON', 'Request body is not valid JSON');
  }
  if (error.statusCode === 400 && error instanceof SyntaxError) {
    return new ApiError('INVALID_JSON', 'Request body is not valid JSON');
  }
  if (error.statusCode === 413) return new ApiError('PAYLOAD_TOO_LARGE', 'Request body is too large');
  if (error.statusCode === 429) return new ApiError('RATE_LIMITED', 'Too many requests');
  return undefined;
}

const REASON_PHRASES: Record<number, string> = { 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/**
 * A request Node's HTTP parser refused before Fastify saw it (Fastify's `clientErrorHandler`):
 * headers over the server's limit are a 431, a request slower than the request timeout a 408,
 * anything else a 400, all in the contract's shape,
 * written to the socket, which then closes.
 */
export function clientErrorResponse(error: { code?: string }): string {
  const known =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError('HEADERS_TOO_LARGE', 'Request headers are too large (the query string among them)')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new ApiError(
            'REQUEST_TIMEOUT',
            'The request took too long to arrive: send its headers and body without pauses',
          )
        : new ApiError('BAD_REQUEST', 'The request is not valid HTTP');
  const json = JSON.stringify(body(known));
  const reason = REASON_PHRASES[known.statusCode] ?? 'Bad Request';
  return (
    `HTTP/1.1 ${known.statusCode} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`
  );
}

/**
 * Errors Fastify's router raises before any route runs (Fastify's `frameworkErrors` option), in
 * the contract's shape: a path that is not valid percent-encoding, a path parameter over the
 * router's length limit.
 */
export function frameworkError(error: FastifyError): { statusCode: number; body: ErrorBody } {
  const known =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new ApiError('URI_TOO_LONG', 'A path parameter is too long')
      : error.code === 'FST_ERR_BAD_URL'
        ? new ApiError('BAD_URL', 'The request path is not valid percent-encoding')
        : (fromFastify(error) ?? new ApiError('BAD_REQUEST', 'Bad request'));
  return { statusCode: known.statusCode, body: body(known) };
}

/**
 * One handler turns every thrown error into the contract's JSON; a 500 never leaks internals.
 * `page` may answer a request no route matched with a page instead (the dashboard's deep links);
 * it returns undefined for requests it leaves to the JSON 404.
 */
export function installErrorHandling(
  app: FastifyInstance,
  options: { page?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply | undefined } = {},
): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known = error instanceof ApiError ? error : fromFastify(error);
    if (known) {
      // A 401 says how to authenticate (RFC 9110): the API key as a bearer token.
      if (known.statusCode === 401) void reply.header('www-authenticate', 'Bearer realm="openline"');
      // A limit that says when it opens again says it as Retry-After too; the rate limit sets its
      // own; any other 429 (a busy resource) asks for a minute.
      if (typeof known.extra?.retry_after === 'number')
        void reply.header('retry-after', String(known.extra.retry_after));
      else if (known.statusCode === 429 && !reply.hasHeader('retry-after')) void reply.header('retry-after', '60');
      return reply.status(known.statusCode).send(body(known));
    }
    if (isStorageUnavailable(error)) {
      // Not the request's fault and not a bug: the same request succeeds once the database is back.
      request.log.warn({ err: error }, 'database unavailable');
      const unavailable = new ApiError('STORAGE_UNAVAILABLE', 'The database is unavailable; try again shortly');
      void reply.header('retry-after', String(STORAGE_RETRY_AFTER_S));
      return reply.status(unavailable.statusCode).send(body(unavailable));
    }
    const requestId = String(request.id ?? randomUUID());
    request.log.error({ err: error, request_id: requestId }, 'unhandled error');
    const internal: ErrorBody = {
      status: 'error',
      message: `Internal server error (request id ${requestId})`,
      code: 'INTERNAL_ERROR',
      request_id: requestId,
    };
    return reply.status(500).send(internal);
  });
  app.setNotFoundHandler((request, reply) => {
    const page = options.page?.(request, reply);
    if (page) return page;
    const notFoundBody: ErrorBody = {
      status: 'error',
      message: `Route ${request.method} ${request.url.split('?')[0]} not found`,
      code: 'ROUTE_NOT_FOUND',
    };
    return reply.status(404).send(notFoundBody);
  });
}
