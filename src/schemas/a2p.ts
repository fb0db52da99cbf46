import { Type, type Static } from '@sinclair/typebox';
import { Nullable, StringEnum, checked } from './common.js';

/** Seed 2.9. */
export const A2P_VERTICALS = [
  'AUTOMOTIVE',
  'AGRICULTURE',
  'BANKING',
  'CONSTRUCTION',
  'CONSUMER',
  'EDUCATION',
  'ENGINEERING',
  'ENERGY',
  'OIL_AND_GAS',
  'FAST_MOVING_CONSUMER_GOODS',
  'FINANCIAL',
  'FINTECH',
  'FOOD_AND_BEVERAGE',
  'GOVERNMENT',
  'HEALTHCARE',
  'HOSPITALITY',
  'INSURANCE',
  'LEGAL',
  'MANUFACTURING',
  'MEDIA',
  'ONLINE',
  'PROFESSIONAL_SERVICES',
  'RAW_MATERIALS',
  'REAL_ESTATE',
  'RELIGION',
  'RETAIL',
  'JEWELRY',
  'TECHNOLOGY',
  'TELECOMMUNICATIONS',
  'TRANSPORTATION',
  'TRAVEL',
  'ELECTRONICS',
  'NOT_FOR_PROFIT',
] as const;

/** Seed 2.9. */
export const A2P_BUSINESS_TYPES = [
  'Partnership',
  'Limited Liability Corporation',
  'Co-operative',
  'Non-profit Corporation',
  'Corporation',
] as const;

export const A2P_STATUSES = ['pending', 'approved', 'failed'] as const;
export type A2pStatus = (typeof A2P_STATUSES)[number];

const C_SUITE = new Set([
  'ceo',
  'cfo',
  'coo',
  'cto',
  'cio',
  'cmo',
  'ciso',
  'cso',
  'cro',
  'cpo',
  'cdo',
  'cco',
  'cao',
  'chro',
]);

/**
 * Whether a job title is C-suite or VP level (seed 2.9: trusted_user.position): the usual C-level
 * abbreviations, "Chief ... Officer", President, Vice President / VP (also SVP, EVP, "VP of
 * Sales"). Assistant titles ("Assistant Vice President", "Assistant to the CEO") are not.
 */
export function isExecutivePosition(title: string): boolean {
  const words = title
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter(Boolean);
  if (words.length === 0 || words.includes('assistant')) return false;
  if (words.some((w) => C_SUITE.has(w) || w === 'vp' || w === 'svp' || w === 'evp' || w === 'president')) return true;
  const chief = words.indexOf('chief');
  return chief !== -1 && words.indexOf('officer') > chief;
}

export const POSITION_RULE =
  'must be a C-suite or VP level title, such as CEO, CFO, Chief Operating Officer, President or VP';

const NonEmpty = (description?: string) =>
  Type.String({ minLength: 1, ...(description === undefined ? {} : { description }) });

export const TrustedUser = Type.Object(
  {
    position: Type.String({
      minLength: 1,
      description: `C-suite or VP level (${POSITION_RULE.replace('must be ', '')})`,
    }),
    first_name: NonEmpty(),
    last_name: NonEmpty(),
    phone_number: checked(Type.String({ description: 'E.164, or 10 US digits' }), 'phone'),
    email: Type.String({ format: 'email' }),
  },
  { additionalProperties: true, description: 'An authorized representative of the business' },
);

/** Seed 2.9: the body of A2P Registration. Every field is required. */
export const A2pRegistrationRequest = Type.Object(
  {
    businessName: NonEmpty('Legal business name'),
    ein: Type.String({
      pattern: '^(\\d{2}-\\d{7}|\\d{9})$',
      'x-message': 'must be a US EIN: NN-NNNNNNN or 9 digits',
      example: '12-3456789',
    }),
    vertical: StringEnum(A2P_VERTICALS),
    address: NonEmpty('Street address'),
    city: NonEmpty(),
    state: checked(Type.String({ description: 'US state code, e.g. CA' }), 'us_state'),
    postalCode: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9 -]{1,9}$', 'x-message': 'must be a postal code' }),
    country: NonEmpty(),
    email: Type.String({ format: 'email', description: 'Business e-mail address' }),
    type: StringEnum(A2P_BUSINESS_TYPES),
    website: checked(Type.String({ description: 'http:// or https:// URL of the business website' }), 'http_url'),
    opt_in_info: NonEmpty('How recipients opt in to messages'),
    messageSamples: Type.Array(Type.String({ pattern: '\\S', 'x-message': 'must be a non-empty string' }), {
      minItems: 3,
      maxItems: 3,
      'x-message': 'must be an array of exactly 3 sample messages',
    }),
    trusted_user: TrustedUser,
  },
  { additionalProperties: true },
);
export type A2pRegistrationRequest = Static<typeof A2pRegistrationRequest>;

/** Keeps the fields of seed 2.9 only, in their canonical forms (EIN NN-NNNNNNN, state upper case). */
export function normalizeRegistration(input: A2pRegistrationRequest): A2pRegistrationRequest {
  const digits = input.ein.replace('-', '');
  const { position, first_name, last_name, phone_number, email } = input.trusted_user;
  return {
    businessName: input.businessName.trim(),
    ein: `${digits.slice(0, 2)}-${digits.slice(2)}`,
    vertical: input.vertical,
    address: input.address,
    city: input.city,
    state: input.state.toUpperCase(),
    postalCode: input.postalCode,
    country: input.country,
    email: input.email,
    type: input.type,
    website: input.website,
    opt_in_info: input.opt_in_info,
    messageSamples: [...input.messageSamples],
    trusted_user: { position, first_name, last_name, phone_number, email },
  };
}

export const A2pRegisterResponse = Type.Object({
  status: Type.Literal('success'),
  message: Type.String(),
  data: Type.Object({
    registration_id: Type.String(),
    status: StringEnum(A2P_STATUSES),
    created_at: Type.String(),
  }),
});

export const A2pStatusRequest = Type.Object(
  { registration_id: Type.String({ minLength: 1 }) },
  { additionalProperties: true },
);

export const A2pStatusResponse = Type.Object({
  status: StringEnum(A2P_STATUSES, { description: 'The registration status (as the hosted service answers)' }),
  registration_id: Type.String(),
  brandType: Type.String(),
  failureReason: Nullable(Type.String()),
});

/** Seed 2.10: `webhook` is a URL, or null / false / "" to clear it. */
export const SmsWebhookRequest = Type.Object(
  {
    phone_number: Type.Union([Type.String({ minLength: 1 }), Type.Number()], {
      description: 'One of your inbound numbers',
    }),
    webhook: Type.Union(
      [
        checked(Type.String({ minLength: 1, description: 'URL called when an SMS arrives' }), 'http_url'),
        Type.Literal(''),
        Type.Null(),
        Type.Literal(false),
      ],
      { 'x-message': 'must be a URL, or null/false to clear' },
    ),
  },
  { additionalProperties: true },
);

export const SmsWebhookResponse = Type.Object({
  status: Type.Literal('success'),
  phone_number: Type.String(),
  webhook: Nullable(Type.String()),
});
