/**
 * Call screeners (a carrier's or a phone's screening assistant) ask who is calling and why before
 * they put a caller through. They ask for a name, or say that the call is screened; a phone menu
 * asking only for "the reason for your call" is a speech menu, and a voicemail asking to "leave
 * your name and number" is a voicemail, not a screener.
 */
const SCREENING_PROMPT =
  /\b(screening (?:service|assistant)|call screening|being screened|call assist|(?:say|state|tell me|give me|record) your name|who (?:you are|is calling)\b.*\b(?:why|what|reason|regarding)|what(?:'s| is) your name and (?:why|what)|see if (?:this person|they|he|she) (?:is|are) available)/i;

/** Whether an utterance is a screener's prompt ("Please say your name and why you are calling"). */
export function isScreeningPrompt(text: string): boolean {
  return SCREENING_PROMPT.test(text);
}
