import type { TwilioClient } from './client.js';

/** Why a number could not be bought: nothing free where asked, or Twilio refused (its error code). */
export class TwilioPurchaseError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'TwilioPurchaseError';
  }
}

export interface TwilioPurchase {
  /** ISO country: US or CA. */
  country: string;
  /** Three digits; undefined: anywhere in the country. */
  areaCode: string | undefined;
  /** A specific E.164 number to buy instead of searching. */
  phoneNumber: string | undefined;
  /** Where Twilio sends the number's calls and messages (Openline's /twilio/voice and /twilio/sms). */
  voiceUrl: string;
  smsUrl: string;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' || typeof code === 'string' ? String(code) : undefined;
}

/**
 * Buys a number on a Twilio account: the first local number with voice and SMS that
 * AvailablePhoneNumbers offers in the area code (or the number asked for), then IncomingPhoneNumbers
 * create with its voice and SMS webhooks pointing at Openline. Returns the number bought (E.164).
 */
export async function buyTwilioNumber(client: TwilioClient, purchase: TwilioPurchase): Promise<string> {
  let phoneNumber = purchase.phoneNumber;
  if (phoneNumber === undefined) {
    let offered: { phoneNumber: string }[];
    try {
      offered = await client.availablePhoneNumbers(purchase.country).local.list({
        ...(purchase.areaCode === undefined ? {} : { areaCode: Number(purchase.areaCode) }),
        voiceEnabled: true,
        smsEnabled: true,
        limit: 1,
      });
    } catch (error) {
      const code = codeOf(error);
      throw new TwilioPurchaseError(`Twilio refused the number search (error ${code ?? 'network'})`, code);
    }
    phoneNumber = offered[0]?.phoneNumber;
    if (!phoneNumber) {
      throw new TwilioPurchaseError(
        `Twilio has no number available${purchase.areaCode ? ` in area code ${purchase.areaCode}` : ''}`,
        undefined,
      );
    }
  }
  try {
    const bought = await client.incomingPhoneNumbers.create({
      phoneNumber,
      voiceUrl: purchase.voiceUrl,
      voiceMethod: 'POST',
      smsUrl: purchase.smsUrl,
      smsMethod: 'POST',
    });
    return bought.phoneNumber;
  } catch (error) {
    const code = codeOf(error);
    throw new TwilioPurchaseError(`Twilio refused the purchase (error ${code ?? 'network'})`, code);
  }
}

/**
 * Takes a number the Twilio account already holds (Bring Your Own Twilio): finds it among the
 * account's IncomingPhoneNumbers and points its voice and SMS webhooks at Openline. Twilio ignores
 * a number's URLs while a TwiML App or an Elastic SIP trunk takes its calls, or a TwiML App its
 * messages: those are detached. A Messaging Service is left in place (A2P 10DLC needs the number in
 * one); its messages reach Openline when the service defers to the sender's webhook. Returns why
 * not, or null when done.
 */
export async function adoptTwilioNumber(
  client: TwilioClient,
  phoneNumber: string,
  urls: { voiceUrl: string; smsUrl: string },
): Promise<string | null> {
  let held: { sid: string; voiceApplicationSid?: string; trunkSid?: string | null; smsApplicationSid?: string }[];
  try {
    held = await client.incomingPhoneNumbers.list({ phoneNumber, limit: 1 });
  } catch (error) {
    return `Twilio refused the lookup (error ${codeOf(error) ?? 'network'})`;
  }
  const number = held[0];
  if (!number) return 'is not a number of this Twilio account';
  try {
    await client.incomingPhoneNumbers(number.sid).update({
      voiceUrl: urls.voiceUrl,
      voiceMethod: 'POST',
      smsUrl: urls.smsUrl,
      smsMethod: 'POST',
      ...(number.voiceApplicationSid ? { voiceApplicationSid: '' } : {}),
      ...(number.trunkSid ? { trunkSid: '' } : {}),
      ...(number.smsApplicationSid?.startsWith('AP') ? { smsApplicationSid: '' } : {}),
    });
  } catch (error) {
    return `Twilio refused to point it at Openline (error ${codeOf(error) ?? 'network'})`;
  }
  return null;
}
