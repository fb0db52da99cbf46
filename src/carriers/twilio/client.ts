import type twilio from 'twilio';
import type { CredentialStore } from '../../store/credentials.js';

/** A Twilio account's API credentials (never logged). */
export interface TwilioAccount {
  accountSid: string;
  authToken: string;
}

export type TwilioClient = ReturnType<typeof twilio>;

/** Twilio's own REST origin: with it the SDK's hosts (api., messaging.twilio.com) are used unchanged. */
export const DEFAULT_TWILIO_API_URL = 'https://api.twilio.com';

type RequestOptions = Parameters<InstanceType<typeof twilio.RequestClient>['request']>[0];

/**
 * The SDK's HTTP client with every request sent to another origin, path and query kept: the
 * SDK's supported extension point (ClientOpts.httpClient, a RequestClient). Twilio's products live
 * on separate hosts (api.twilio.com/2010-04-01/..., messaging.twilio.com/v1/...) whose paths do not
 * overlap, so one origin (the local emulator, a recording proxy) can serve all of them.
 */
function redirectingRequestClient(sdk: typeof twilio, origin: URL): InstanceType<typeof twilio.RequestClient> {
  class RedirectingRequestClient extends sdk.RequestClient {
    override request<TData>(options: RequestOptions & { data?: TData }) {
      const target = new URL(options.uri);
      const moved = new URL(`${target.pathname}${target.search}`, origin);
      return super.request<TData>({ ...options, uri: moved.toString() });
    }
  }
  return new RedirectingRequestClient({ timeout: 15_000 });
}

/**
 * A REST client for one Twilio account. `apiUrl` (OPENLINE_TWILIO_API_URL) other than Twilio's
 * own sends every request there instead (tests point it at the emulator). The SDK is loaded by
 * the first client: a server that never talks to Twilio does without it.
 */
export async function createTwilioClient(
  account: TwilioAccount,
  apiUrl: string = DEFAULT_TWILIO_API_URL,
): Promise<TwilioClient> {
  const { default: sdk } = await import('twilio');
  const redirected = apiUrl.replace(/\/+$/, '') !== DEFAULT_TWILIO_API_URL;
  return sdk(account.accountSid, account.authToken, {
    ...(redirected ? { httpClient: redirectingRequestClient(sdk, new URL(apiUrl)) } : { timeout: 15_000 }),
    autoRetry: true,
    maxRetries: 3,
  });
}

/**
 * The Twilio account that serves an Openline account's call or number: the account's own (BYO,
 * the encrypted_key reference stored with the call or number) when it holds Twilio credentials,
 * else the server's (TWILIO_ACCOUNT_SID / TWILIO_AUTH_TOKEN), else none.
 */
export async function twilioAccountFor(
  credentials: Pick<CredentialStore, 'resolve'>,
  server: TwilioAccount | undefined,
  accountId: string,
  credentialId: string | null | undefined,
): Promise<TwilioAccount | undefined> {
  if (credentialId) {
    const own = await credentials.resolve(accountId, credentialId);
    if (own?.provider === 'twilio') return { accountSid: own.account_sid, authToken: own.auth_token };
    // A reference that is gone or of another carrier does not silently fall back to the server's account.
    return undefined;
  }
  return server;
}
