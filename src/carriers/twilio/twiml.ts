// The TwiML builders alone: the SDK's index loads its whole REST client.
import VoiceResponse from 'twilio/lib/twiml/VoiceResponse.js';
import MessagingResponse from 'twilio/lib/twiml/MessagingResponse.js';
import { signedUrl } from './signature.js';

/** The largest TwiML document Twilio accepts inline (the Calls resource's Twiml parameter). */
export const MAX_INLINE_TWIML = 4000;

/** The websocket URL of our media stream route, from the public URL Twilio reaches us at (its path kept). */
export function mediaStreamUrl(publicUrl: string): string {
  const url = new URL(signedUrl(publicUrl, '/twilio/media'));
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.toString();
}

/**
 * `<Response><Connect><Stream url="..."><Parameter .../></Stream></Connect></Response>`: connects
 * the call to our bidirectional media stream. The parameters come back in the stream's `start`
 * message (customParameters); the SDK escapes every attribute value.
 */
export function connectStreamTwiml(streamUrl: string, parameters: Record<string, string>): string {
  const response = new VoiceResponse();
  const stream = response.connect().stream({ url: streamUrl });
  for (const [name, value] of Object.entries(parameters)) stream.parameter({ name, value });
  return response.toString();
}

/**
 * `<Response><Dial callerId="...">number</Dial></Response>`: hands the caller over (transfer).
 * With `callback`, the Dial tells it how it went: the `<Number>`'s statusCallback when the target
 * answers, and the Dial's action URL (DialCallStatus) when the Dial is over.
 */
export function dialTwiml(number: string, callerId: string | null, callback?: string): string {
  const response = new VoiceResponse();
  const attributes = callerId ? { callerId } : {};
  if (!callback) {
    response.dial(attributes, number);
    return response.toString();
  }
  response
    .dial({ ...attributes, action: callback, method: 'POST' })
    .number({ statusCallback: callback, statusCallbackEvent: ['answered'], statusCallbackMethod: 'POST' }, number);
  return response.toString();
}

/** `<Response><Hangup/></Response>`: ends the call (after a transfer's Dial). */
export function hangupTwiml(): string {
  const response = new VoiceResponse();
  response.hangup();
  return response.toString();
}

/** `<Response><Reject/></Response>`: an inbound call on a number nobody holds. */
export function rejectTwiml(): string {
  const response = new VoiceResponse();
  response.reject();
  return response.toString();
}

/** An empty `<Response/>`: acknowledges a messaging webhook without replying to the sender. */
export function emptyMessagingResponse(): string {
  return new MessagingResponse().toString();
}
