import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { Services } from '../../services.js';
import { normalizePhone } from '../../domain/phone.js';
import { createConnectedCall } from '../../calls/inbound.js';
import { deliverInboundSms, MAX_SMS_BODY } from '../../sms/inbound.js';
import type { TwilioAccount } from './client.js';
import { isValidTwilioSignature, signedUrl, type TwilioParams } from './signature.js';
import { parseStreamMessage, TwilioMediaStream } from './media-stream.js';
import { connectStreamTwiml, emptyMessagingResponse, rejectTwiml } from './twiml.js';

/** A stream that does not present a valid `start` this soon after connecting is closed. */
const START_TIMEOUT_MS = 10_000;
/** An inbound call's stream token lapses if Twilio has not opened the stream this soon. */
const INBOUND_STREAM_TTL_MS = 60_000;
/** Twilio's side of the server is not part of the API: kept out of the OpenAPI document. */
const HIDDEN = { schema: { hide: true } };

interface FormBody {
  /** Every parameter as Twilio signed it (repeated keys keep all their values). */
  signed: TwilioParams;
  /** The last value of each parameter, for reading. */
  values: Record<string, string>;
}

function parseForm(raw: string): FormBody {
  const signed: TwilioParams = {};
  const values: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(raw)) {
    const before = signed[key];
    signed[key] = before === undefined ? value : Array.isArray(before) ? [...before, value] : [before, value];
    values[key] = value;
  }
  return { signed, values };
}

function form(request: FastifyRequest): FormBody {
  const body = request.body as FormBody | undefined;
  return body && typeof body === 'object' && 'signed' in body ? body : { signed: {}, values: {} };
}

function e164(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const phone = normalizePhone(raw);
  return phone.ok ? phone.e164 : undefined;
}

/**
 * Twilio's side of Openline (docs/twilio.md), outside the API key: the media stream websocket
 * and the webhooks Twilio calls. Every webhook must carry a valid X-Twilio-Signature made with the
 * auth token of the Twilio account concerned (the call's or the number's BYO credentials, else the
 * server's), over OPENLINE_PUBLIC_URL + path + query; anything else gets 403. The media websocket
 * carries no signature: its `start` must present the one-time token its TwiML was given.
 */
export default async function twilioRoutes(app: FastifyInstance, options: { services: Services }): Promise<void> {
  const { services } = options;
  const carrier = services.twilio;
  const publicUrl = services.config.publicUrl;
  const log = app.log;

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
    done(null, parseForm(String(body))),
  );

  /** Answers 403 and returns false unless the request is signed by `account`'s auth token. */
  function signedBy(request: FastifyRequest, reply: FastifyReply, account: TwilioAccount | undefined): boolean {
    const header = request.headers['x-twilio-signature'];
    const signature = Array.isArray(header) ? header[0] : header;
    if (
      account &&
      isValidTwilioSignature(account.authToken, signature, signedUrl(publicUrl, request.url), form(request).signed)
    ) {
      return true;
    }
    log.warn({ path: request.routeOptions.url }, 'Twilio webhook refused: missing or invalid X-Twilio-Signature');
    void reply.code(403).send({ status: 'error', code: 'FORBIDDEN', message: 'Missing or invalid X-Twilio-Signature' });
    return false;
  }

  /**
   * Who holds the number a webhook is for, and the Twilio account that signs its webhooks: the
   * number's own account; a number nobody holds can only be the server's.
   */
  async function numberAccount(to: string | undefined) {
    const holder = to ? await services.inbound.findHolder(to) : undefined;
    const account = holder ? await carrier.account(holder.accountId, holder.credentialId) : services.config.twilio;
    return { holder, account };
  }

  const xml = (reply: FastifyReply, body: string) => reply.type('text/xml; charset=utf-8').send(body);
  const callIdOf = (request: FastifyRequest) => {
    const value = (request.query as Record<string, unknown> | undefined)?.call_id;
    return typeof value === 'string' ? value : undefined;
  };

  app.post('/twilio/status', HIDDEN, async (request, reply) => {
    const callId = callIdOf(request);
    const account = callId ? await carrier.accountForCall(callId) : undefined;
    if (!signedBy(request, reply, account)) return reply;
    carrier.statusCallback(callId!, form(request).values);
    return reply.code(204).send();
  });

  app.post('/twilio/amd', HIDDEN, async (request, reply) => {
    const callId = callIdOf(request);
    const account = callId ? await carrier.accountForCall(callId) : undefined;
    if (!signedBy(request, reply, account)) return reply;
    carrier.amdCallback(callId!, form(request).values, services.clock.now());
    return reply.code(204).send();
  });

  /**
   * A transfer's Dial: its target answered, or the Dial is over (its action): the caller goes back
   * to the agent on a new stream when the target was not reached, else the call ends.
   */
  app.post('/twilio/dial', HIDDEN, async (request, reply) => {
    const callId = callIdOf(request);
    const account = callId ? await carrier.accountForCall(callId) : undefined;
    if (!signedBy(request, reply, account)) return reply;
    const twiml = carrier.dialCallback(callId!, form(request).values);
    return twiml === undefined ? reply.code(204).send() : xml(reply, twiml);
  });

  app.post('/twilio/voice', HIDDEN, async (request, reply) => {
    const params = form(request).values;
    const to = e164(params.To);
    const { holder, account } = await numberAccount(to);
    if (!signedBy(request, reply, account)) return reply;
    const from = e164(params.From) ?? params.From ?? '';
    // A draining process takes no new call: rejected, Twilio tries the number's fallback URL.
    if (!holder || !to || !account || !carrier.canAnswer || !params.CallSid || services.draining)
      return xml(reply, rejectTwiml());
    // A caller the account blocked is rejected before anything answers.
    if (await services.blocked.get(holder.accountId, from)) return xml(reply, rejectTwiml());
    const token = carrier.expectStream(
      params.CallSid,
      (stream) => {
        void answerInbound(stream, { ...holder, account, to, from }).catch((error: unknown) => {
          log.error({ err: error }, 'Twilio inbound call could not start');
          stream.close();
        });
      },
      INBOUND_STREAM_TTL_MS,
    );
    return xml(reply, connectStreamTwiml(carrier.streamUrl, { token }));
  });

  /** The stream of an inbound call started: the call record, its leg, and the engine answers. */
  async function answerInbound(
    stream: TwilioMediaStream,
    call: {
      accountId: string;
      credentialId: string | null;
      number: Parameters<typeof createConnectedCall>[2];
      account: TwilioAccount;
      to: string;
      from: string;
    },
  ): Promise<void> {
    const row = await createConnectedCall(services, call.accountId, call.number, call.from, 'inbound', {
      carrier: 'twilio',
      carrierCallId: stream.callSid,
      credentialId: call.credentialId,
    });
    const leg = carrier.answerInbound(row.id, call.account, stream, row.request, call.to);
    void services.engine.answer(row.id, leg);
  }

  app.post('/twilio/sms', HIDDEN, async (request, reply) => {
    const params = form(request).values;
    const to = e164(params.To);
    const { account } = await numberAccount(to);
    if (!signedBy(request, reply, account)) return reply;
    if (to && params.From) {
      await deliverInboundSms(services, {
        to,
        from: params.From,
        body: (params.Body ?? '').slice(0, MAX_SMS_BODY),
        carrier: 'twilio',
        carrierMessageId: params.MessageSid || null,
      });
    }
    return xml(reply, emptyMessagingResponse());
  });

  app.get('/twilio/media', { ...HIDDEN, websocket: true }, (socket: WebSocket) => {
    let stream: TwilioMediaStream | undefined;
    const deadline = setTimeout(() => socket.close(1008, 'no valid start'), START_TIMEOUT_MS);
    socket.on('close', () => clearTimeout(deadline));
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      const message = parseStreamMessage(
        Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data),
      );
      if (!message) return;
      if (stream) return stream.receive(message);
      if (message.event !== 'start') return;
      const take = carrier.acceptStream(message.start);
      clearTimeout(deadline);
      if (!take) {
        log.warn('Twilio media stream refused: unknown or used stream token');
        socket.close(1008, 'unknown stream');
        return;
      }
      stream = new TwilioMediaStream(socket, message.start);
      take(stream);
    });
  });
}
