import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, Nullable } from '../schemas/common.js';
import { PhoneInput } from '../schemas/call.js';
import { normalizePhone } from '../domain/phone.js';
import { notFound } from '../errors.js';
import { createConnectedCall } from '../calls/inbound.js';

const tags = ['Sandbox'];

/** The sandbox network's own controls: ring one of the account's numbers as a caller would. */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.post(
    '/sandbox/inbound',
    {
      schema: {
        tags,
        summary: 'Ring an inbound number on the sandbox network',
        description:
          'A sandbox caller (chosen by `from`, as in the sandbox numbers table) calls one of your inbound numbers, ' +
          'whose agent answers. When `from` is another of your configured numbers, its agent places the call: ' +
          'two agents talk, and each side has its own call record.',
        body: Type.Object({ from: PhoneInput, to: PhoneInput }, { additionalProperties: true }),
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            call_id: Type.String({ description: 'The inbound call on `to`' }),
            caller_call_id: Nullable(Type.String({ description: 'The outbound call of the calling agent, if any' })),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.account.id;
      const from = normalizePhone(request.body.from);
      const to = normalizePhone(request.body.to);
      if (!from.ok || !to.ok) throw notFound('Inbound number');
      const callee = await services.inbound.get(accountId, to.e164);
      if (!callee) throw notFound('Inbound number');
      const caller = from.e164 === to.e164 ? undefined : await services.inbound.get(accountId, from.e164);
      const callId = await createConnectedCall(services, accountId, callee, from.e164, 'inbound');
      if (!caller) {
        const leg = services.sandbox.connectInbound({ from: from.e164, to: to.e164, callId });
        void services.engine.answer(callId, leg);
        return { status: 'success' as const, call_id: callId, caller_call_id: null };
      }
      const callerCallId = await createConnectedCall(services, accountId, caller, to.e164, 'outbound');
      const [callerLeg, calleeLeg] = services.sandbox.connectAgents({ callId, from: from.e164, to: to.e164 });
      void services.engine.answer(callerCallId, callerLeg);
      void services.engine.answer(callId, calleeLeg);
      return { status: 'success' as const, call_id: callId, caller_call_id: callerCallId };
    },
  );
}
