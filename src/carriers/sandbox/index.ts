/** The sandbox telephone network: the default carrier, and its personas as data. */
export { SandboxNetwork } from './network.js';
export type { CallerLookup, CallLogEntry, SandboxCall, SandboxNetworkOptions, TransferRecord } from './network.js';
export { createLegPair, speakingTimeMs, DEFAULT_TIMING, SandboxLegEnd } from './leg-pair.js';
export type { LegPairOptions, LegTiming } from './leg-pair.js';
export {
  BUILTIN_PERSONA_DIR,
  DEFAULT_PERSONA_NUMBER,
  PersonaFileError,
  PersonaSet,
  loadPersonas,
  parsePersona,
  readPersonaDir,
} from './persona-format.js';
export type { Persona, RingBehaviour, Rule, Step, Listen, LoadedPersona } from './persona-format.js';
export { runPersona } from './persona.js';
export type { ConversationLine, LineWriter, PersonaSession, WrittenLine } from './persona.js';
