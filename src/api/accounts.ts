import { Type } from '@sinclair/typebox';
import type { Api } from './types.js';
import type { Services } from '../services.js';
import { errorResponses, SuccessMessage, ErrorResponse } from '../schemas/common.js';
import {
  CARRIER_CREDENTIAL_SCHEMAS,
  CARRIER_PROVIDERS,
  CarrierCredentialBody,
  EncryptedKeyParams,
  MeResponse,
  ProviderOnly,
  StoredCredential,
  WebhookSecretResponse,
  type CarrierCredential,
  type CarrierProvider,
} from '../schemas/account.js';
import { conflict, notFound, validationError } from '../errors.js';
import { buildValidatorCompiler, formatValidationErrors } from './validation.js';
import { isRecord } from '../domain/records.js';

export { credentialFromHeader } from '../security/credentials.js';

type Validator = ReturnType<ReturnType<typeof buildValidatorCompiler>>;

/**
 * Checks a carrier credentials body: first its provider, then the fields of that provider's own
 * schema, so a missing field is named instead of "body must match one of several shapes".
 */
function credentialChecker(services: Services): (body: unknown) => CarrierCredential {
  const compile = buildValidatorCompiler({
    allowPrivateUrls: services.config.allowPrivateUrls,
    voiceAliases: services.config.voiceAliases,
  });
  const asBody = (schema: object): Validator => compile({ schema, method: 'POST', url: '/accounts', httpPart: 'body' });
  const providerOnly = asBody(ProviderOnly);
  const byProvider = Object.fromEntries(
    CARRIER_PROVIDERS.map((p) => [p, asBody(CARRIER_CREDENTIAL_SCHEMAS[p])]),
  ) as Record<CarrierProvider, Validator>;
  return (input) => {
    if (!isRecord(input)) throw validationError(['body must be an object']);
    // The hosted API's body is Twilio's credentials alone: {account_sid, auth_token}.
    const unnamed = input.provider === undefined || input.provider === null || input.provider === '';
    const body = unnamed && input.account_sid !== undefined ? { ...input, provider: 'twilio' } : input;
    if (providerOnly(body) !== true) throw validationError(formatValidationErrors(providerOnly.errors ?? []));
    const validate = byProvider[body.provider as CarrierProvider];
    if (validate(body) !== true) throw validationError(formatValidationErrors(validate.errors ?? []));
    return body as CarrierCredential;
  };
}

const tags = ['Account'];

/** The caller's account, its webhook secret and its carrier credentials: CONTRACT sections 3 and 9. */
export default async function routes(app: Api, services: Services): Promise<void> {
  app.get(
    '/me',
    {
      schema: {
        tags,
        summary: 'The account of the API key',
        description: 'The account and its API keys (prefixes only; keys are stored as hashes).',
        response: { 200: MeResponse, ...errorResponses },
      },
    },
    async (request) => ({
      status: 'success' as const,
      account: request.account,
      keys: await services.accounts.listKeys(request.account.id),
      billing: { current_balance: 0, refill_to: null },
      total_calls: await services.calls.count(request.account.id),
    }),
  );

  app.post(
    '/webhook-secret',
    {
      schema: {
        tags,
        summary: 'Rotate the webhook signing secret',
        description:
          'Replaces the secret that signs webhooks and returns the new one, only in this response. ' +
          'Webhooks sent from now on are signed with it.',
        response: { 200: WebhookSecretResponse, ...errorResponses },
      },
    },
    async (request) => ({
      status: 'success' as const,
      webhook_secret: await services.accounts.rotateWebhookSecret(request.account.id),
    }),
  );

  const checkCredential = credentialChecker(services);

  app.post(
    '/accounts',
    {
      // Validated by provider in the handler; the declared schema documents the body.
      attachValidation: true,
      schema: {
        tags,
        summary: 'Register carrier credentials',
        description:
          'Stores the credentials of your own carrier account, encrypted at rest, and returns an opaque ' +
          'encrypted_key. Send it as the encrypted_key header to place and receive calls through that account.',
        body: CarrierCredentialBody,
        response: {
          200: Type.Object({
            status: Type.Literal('success'),
            encrypted_key: Type.String({ description: 'Opaque reference; send it as the encrypted_key header' }),
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const credential = checkCredential(request.body);
      const stored = await services.credentials.create(request.account.id, credential);
      if (credential.provider === 'sip') await services.sipTrunksChanged();
      return { status: 'success' as const, encrypted_key: stored.id };
    },
  );

  app.get(
    '/accounts',
    {
      schema: {
        tags,
        summary: 'List registered carrier credentials',
        description: 'References and non-secret labels only; secrets are never returned.',
        response: {
          200: Type.Object({ status: Type.Literal('success'), accounts: Type.Array(StoredCredential) }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      status: 'success' as const,
      accounts: await services.credentials.list(request.account.id),
    }),
  );

  app.delete(
    '/accounts/:encrypted_key',
    {
      schema: {
        tags,
        summary: 'Delete registered carrier credentials',
        description: 'Refused with 409 while inbound numbers of the account still use them.',
        params: EncryptedKeyParams,
        response: { 200: SuccessMessage, ...errorResponses, 409: ErrorResponse },
      },
    },
    async (request) => deleteCredential(request.account.id, request.params.encrypted_key),
  );

  // The hosted API's form: POST /v1/accounts/delete with the encrypted_key header.
  app.post(
    '/accounts/delete',
    {
      schema: {
        tags,
        summary: 'Delete registered carrier credentials (the encrypted_key header)',
        headers: Type.Object({ encrypted_key: Type.Optional(Type.String()) }),
        response: { 200: SuccessMessage, ...errorResponses, 409: ErrorResponse },
      },
    },
    async (request) => {
      const key = request.headers.encrypted_key?.trim();
      if (!key) throw validationError(['encrypted_key header is required: the key to delete']);
      return deleteCredential(request.account.id, key);
    },
  );

  async function deleteCredential(accountId: string, encryptedKey: string) {
    const inUse = await services.credentials.inboundNumbersUsing(accountId, encryptedKey);
    if (inUse > 0) {
      throw conflict(
        `These carrier credentials are used by ${inUse} inbound number${inUse === 1 ? '' : 's'}; ` +
          'release or move them first',
      );
    }
    if (!(await services.credentials.delete(accountId, encryptedKey))) throw notFound('Carrier credentials');
    await services.sipTrunksChanged();
    return { status: 'success' as const, message: 'Carrier credentials deleted' };
  }
}
