import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, IdParams } from '../schemas/common.js';
import { ApiError, notFound } from '../errors.js';
import { LISTEN_SAMPLE_RATE } from '../calls/listen.js';

/** How long a listen URL may be used to connect: the call's whole life, within reason. */
const LISTEN_URL_TTL_MS = 4 * 3600_000;
/** A listener that cannot keep up (a stalled connection) loses audio rather than piling it up. */
const MAX_BUFFERED_BYTES = 512 * 1024;

interface ListenGrant {
  c: string;
  e: number;
}

/**
 * POST /v1/calls/{id}/listen (the hosted "listen to active call"): a websocket URL streaming the
 * live call's audio, both sides mixed, as 16 kHz 16-bit little-endian mono PCM, until it ends.
 * The URL carries a token sealed with the server's key, good for this call only.
 */
export async function listenRoutes(app: Api, services: Services): Promise<void> {
  app.post(
    '/calls/:id/listen',
    {
      schema: {
        tags: ['Calls'],
        summary: 'Listen to an active call',
        description: `Answers a websocket URL (several listeners may use it) that streams the live call's audio, both sides mixed: binary messages of 16-bit little-endian mono PCM at ${LISTEN_SAMPLE_RATE} Hz, about 100 ms each. The socket closes when the call ends.`,
        params: IdParams,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            data: Type.Object({ url: Type.String() }),
            errors: Type.Null(),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const call = await services.calls.get(request.account.id, request.params.id);
      if (!call) throw notFound('Call');
      if (call.status !== 'started' || call.completed)
        throw new ApiError('BAD_REQUEST', `The call is not active (status ${call.status})`);
      if (!services.listening.isLive(call.id))
        throw new ApiError(
          'BAD_REQUEST',
          'The call has no live audio on this server: a text-mode sandbox call has none, and a call run by another server process is heard there',
        );
      const grant: ListenGrant = { c: call.id, e: services.clock.now().getTime() + LISTEN_URL_TTL_MS };
      const token = services.secrets.seal(JSON.stringify(grant), 'listen');
      const scheme = request.protocol === 'https' ? 'wss' : 'ws';
      const url = `${scheme}://${request.host}/ws/listen/${call.id}?token=${encodeURIComponent(token)}`;
      return { status: 'success' as const, data: { url }, errors: null };
    },
  );
}

/** The listen websocket, outside the API key: its URL's token is the credential. */
export async function listenSocketRoute(app: FastifyInstance, options: { services: Services }): Promise<void> {
  const { services } = options;
  app.get<{ Params: { id: string }; Querystring: { token?: string } }>(
    '/ws/listen/:id',
    { schema: { hide: true }, websocket: true },
    (socket: WebSocket, request) => {
      let grant: ListenGrant | undefined;
      try {
        grant = JSON.parse(services.secrets.open(request.query.token ?? '', 'listen')) as ListenGrant;
      } catch {
        grant = undefined;
      }
      if (!grant || grant.c !== request.params.id || grant.e < services.clock.now().getTime())
        return socket.close(1008, 'invalid or expired listen token');
      const stop = services.listening.listen(grant.c, {
        audio: (chunk) => {
          if (socket.readyState === socket.OPEN && socket.bufferedAmount < MAX_BUFFERED_BYTES) socket.send(chunk);
        },
        end: () => socket.close(1000, 'call ended'),
      });
      if (!stop) return socket.close(1000, 'call not active');
      socket.on('close', stop);
    },
  );
}
