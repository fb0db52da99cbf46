import type { A2pRegistrationRequest, A2pStatus } from '../../schemas/a2p.js';
import type { A2pRegistration, A2pStore } from '../../store/a2p.js';
import type { TwilioAccount, TwilioClient } from './client.js';

/**
 * A2P 10DLC brands on Twilio (Messaging v1 BrandRegistrations). Twilio registers a brand from two
 * Trust Hub bundles (a Secondary Customer Profile and an A2P Messaging Profile) that hold the
 * business details; Openline cannot create those through the public API in one step, so a
 * Twilio-backed registration names them in its body, besides the seed's fields:
 * `twilio_customer_profile_sid` and `twilio_a2p_profile_sid` (BU + 32 hex each).
 */
export const TWILIO_BUNDLE_FIELDS = ['twilio_customer_profile_sid', 'twilio_a2p_profile_sid'] as const;

const BUNDLE_SID = /^BU[0-9a-fA-F]{32}$/;

export interface TwilioBundles {
  customerProfileBundleSid: string;
  a2pProfileBundleSid: string;
}

/** The bundles a Twilio registration names, or the problems with them (each naming its field). */
export function twilioBundles(body: unknown): { bundles?: TwilioBundles; problems: string[] } {
  const record = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const problems: string[] = [];
  for (const field of TWILIO_BUNDLE_FIELDS) {
    const value = record[field];
    if (typeof value !== 'string' || !BUNDLE_SID.test(value)) {
      problems.push(
        `${field} must be a Twilio Trust Hub bundle SID ("BU" followed by 32 hexadecimal characters): ` +
          'registrations on Twilio need the business profile bundles created in the Twilio console',
      );
    }
  }
  if (problems.length > 0) return { problems };
  return {
    bundles: {
      customerProfileBundleSid: record.twilio_customer_profile_sid as string,
      a2pProfileBundleSid: record.twilio_a2p_profile_sid as string,
    },
    problems,
  };
}

/** Twilio's brand status in Openline's terms. */
export function a2pStatusOf(twilioStatus: string): A2pStatus {
  switch (twilioStatus) {
    case 'APPROVED':
      return 'approved';
    case 'FAILED':
    case 'SUSPENDED':
    case 'DELETION_PENDING':
    case 'DELETION_FAILED':
      return 'failed';
    default:
      // PENDING, IN_REVIEW
      return 'pending';
  }
}

export class TwilioA2pError extends Error {
  constructor(readonly code: string | undefined) {
    super(`Twilio refused the brand registration (error ${code ?? 'network'})`);
    this.name = 'TwilioA2pError';
  }
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' || typeof code === 'string' ? String(code) : undefined;
}

export interface TwilioA2pDeps {
  a2p: Pick<A2pStore, 'createExternal' | 'external' | 'decide' | 'get'>;
  client(account: TwilioAccount): Promise<TwilioClient>;
  account(accountId: string, credentialId: string | null): Promise<TwilioAccount | undefined>;
}

/** Submits the brand to Twilio and stores the registration as pending until Twilio decides. */
export async function registerTwilioBrand(
  deps: TwilioA2pDeps,
  accountId: string,
  twilio: { account: TwilioAccount; credentialId: string | null },
  registration: A2pRegistrationRequest,
  bundles: TwilioBundles,
): Promise<A2pRegistration> {
  let brandSid: string;
  try {
    const brand = await (
      await deps.client(twilio.account)
    ).messaging.v1.brandRegistrations.create({
      customerProfileBundleSid: bundles.customerProfileBundleSid,
      a2PProfileBundleSid: bundles.a2pProfileBundleSid,
      brandType: 'STANDARD',
    });
    brandSid = brand.sid;
  } catch (error) {
    throw new TwilioA2pError(codeOf(error));
  }
  return deps.a2p.createExternal(accountId, registration, {
    name: 'twilio',
    brand_id: brandSid,
    credential_id: twilio.credentialId,
  });
}

/**
 * A registration as Twilio sees it now: a pending one submitted to Twilio is fetched and Twilio's
 * verdict recorded (approved, or failed with Twilio's failure_reason). When Twilio cannot be asked,
 * the stored state is returned unchanged.
 */
export async function refreshTwilioBrand(
  deps: TwilioA2pDeps,
  accountId: string,
  id: string,
): Promise<A2pRegistration | undefined> {
  const stored = await deps.a2p.get(accountId, id);
  if (!stored || stored.status !== 'pending') return stored;
  const external = await deps.a2p.external(accountId, id);
  if (!external) return stored;
  const account = await deps.account(accountId, external.credential_id);
  if (!account) return stored;
  try {
    const brand = await (await deps.client(account)).messaging.v1.brandRegistrations(external.brand_id).fetch();
    const status = a2pStatusOf(brand.status);
    const reason = status === 'failed' ? brand.failureReason || `Twilio reports the brand as ${brand.status}` : null;
    await deps.a2p.decide(id, status, reason);
  } catch {
    return stored;
  }
  return deps.a2p.get(accountId, id);
}
