import { Type, type Static } from '@sinclair/typebox';
import { Nullable, StringEnum, checked } from './common.js';
import { parseTrunk } from '../domain/sip-trunk.js';

/** GET /v1/me: the caller's account and its keys (never key material). */
export const AccountInfo = Type.Object({
  id: Type.String(),
  name: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});

export const ApiKeyInfo = Type.Object({
  id: Type.String(),
  prefix: Type.String({ description: 'The first characters of the key, to tell keys apart' }),
  created_at: Type.String({ format: 'date-time' }),
  revoked_at: Nullable(Type.String({ format: 'date-time' })),
});

export const MeResponse = Type.Object({
  status: Type.Literal('success'),
  account: AccountInfo,
  keys: Type.Array(ApiKeyInfo),
  // The hosted API's account fields: clients read the balance and the number of calls.
  billing: Type.Object({
    current_balance: Type.Number({ description: 'Always 0: a self-hosted server keeps no credit' }),
    refill_to: Type.Null(),
  }),
  total_calls: Type.Integer({ description: 'Calls made and received by the account' }),
});

export const WebhookSecretResponse = Type.Object({
  status: Type.Literal('success'),
  webhook_secret: Type.String({
    description: 'Signs webhooks (X-Webhook-Signature, webhook-signature); shown only in this response',
  }),
});

/**
 * Carrier credentials, one schema per provider. The provider is read first and the body is then
 * checked against that provider's schema alone, so that adding a provider (e.g. telnyx with
 * api_key) keeps error messages about the fields the caller actually has to send.
 */
export const TwilioCredential = Type.Object(
  {
    provider: Type.Literal('twilio'),
    account_sid: Type.String({
      pattern: '^AC[0-9a-fA-F]{32}$',
      'x-message': 'must be a Twilio account SID: "AC" followed by 32 hexadecimal characters',
      example: 'AC0123456789abcdef0123456789abcdef',
    }),
    auth_token: Type.String({ minLength: 1, description: 'Twilio auth token; stored encrypted, never returned' }),
  },
  { additionalProperties: true, title: 'Twilio credentials' },
);

/** A SIP trunk of the account's own (docs/sip.md): calls naming its encrypted_key go through it. */
export const SipCredential = Type.Object(
  {
    provider: Type.Literal('sip'),
    trunk: checked(
      Type.String({
        description:
          'The trunk as a SIP URI, as OPENLINE_SIP_TRUNK: sip:[user[:password]@]host[:port][;transport=udp][;srtp=mandatory|optional]',
        example: 'sip:acme:s3cret@sip.provider.example:5060',
      }),
      'sip_trunk',
    ),
    username: Type.Optional(Type.String({ description: "The trunk's digest user (instead of the URI's)" })),
    password: Type.Optional(Type.String({ description: 'Its password; stored encrypted, never returned' })),
  },
  { additionalProperties: true, title: 'SIP trunk' },
);

export const CARRIER_CREDENTIAL_SCHEMAS = { twilio: TwilioCredential, sip: SipCredential } as const;
export type CarrierProvider = keyof typeof CARRIER_CREDENTIAL_SCHEMAS;
export const CARRIER_PROVIDERS = Object.keys(CARRIER_CREDENTIAL_SCHEMAS) as CarrierProvider[];

/** Credentials as sent and as resolved from an encrypted_key (only the provider's own fields). */
export type CarrierCredential = {
  [P in CarrierProvider]: Static<(typeof CARRIER_CREDENTIAL_SCHEMAS)[P]>;
}[CarrierProvider];

/** The body of POST /v1/accounts as documented; validation goes by provider (see above). */
export const CarrierCredentialBody = Type.Union(Object.values(CARRIER_CREDENTIAL_SCHEMAS), {
  description: `Carrier account credentials. provider: ${CARRIER_PROVIDERS.join(', ')}`,
});

/** The provider field alone, checked before the provider's own schema. */
export const ProviderOnly = Type.Object({ provider: StringEnum(CARRIER_PROVIDERS) }, { additionalProperties: true });

/** Keeps only the provider's own fields: unknown body fields must not be encrypted and stored. */
export function pickCredential(body: CarrierCredential): CarrierCredential {
  switch (body.provider) {
    case 'twilio':
      return { provider: 'twilio', account_sid: body.account_sid, auth_token: body.auth_token };
    case 'sip':
      return {
        provider: 'sip',
        trunk: body.trunk,
        ...(body.username !== undefined && { username: body.username }),
        ...(body.password !== undefined && { password: body.password }),
      };
  }
}

/** A non-secret hint of which carrier account a reference holds, for listings. */
export function credentialLabel(credential: CarrierCredential): string {
  switch (credential.provider) {
    case 'twilio':
      return `${credential.account_sid.slice(0, 2)}…${credential.account_sid.slice(-4)}`;
    case 'sip': {
      const trunk = parseTrunk(credential.trunk);
      return typeof trunk === 'string' ? 'sip' : `${trunk.host}:${trunk.port}`;
    }
  }
}

export const StoredCredential = Type.Object({
  id: Type.String({ description: 'The encrypted_key value to send as a header' }),
  provider: StringEnum(CARRIER_PROVIDERS),
  label: Type.String({ description: 'e.g. the last 4 characters of the Twilio account SID' }),
  created_at: Type.String({ format: 'date-time' }),
});
export type StoredCredential = Static<typeof StoredCredential>;

export const EncryptedKeyParams = Type.Object({ encrypted_key: Type.String() });
