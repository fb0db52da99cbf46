/**
 * The persona file format: who answers a sandbox number and what they do, as data. One JSON file
 * per persona; users add their own directories. Files are checked on load so that a mistake is
 * reported with the file and the field, not discovered halfway through a call.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { isRecord } from '../../domain/records.js';

/** What happens when the number is dialed. */
export type RingBehaviour =
  | { kind: 'answer'; afterMs: number }
  | { kind: 'no-answer'; ringMs: number }
  | { kind: 'busy' }
  | { kind: 'unreachable'; reason: string };

/**
 * When a listening persona reacts. Speech triggers (keywords, regex, any, exchangesAtLeast) all
 * have to hold; `digits` reacts to keys, `speechStart` to the other side starting to talk.
 */
export interface Rule {
  /** Whole words or phrases, case-insensitive; any one of them matches. */
  keywords?: string[];
  /** A JavaScript regular expression, case-insensitive. */
  regex?: string;
  /** Keys that match, e.g. "120". */
  digits?: string;
  /** Matches the moment the other side starts speaking (to talk over it). */
  speechStart?: true;
  /** Matches any utterance. */
  any?: true;
  /** Matches once this many utterances have been heard (this one included). */
  exchangesAtLeast?: number;
  do: Step[];
}

export interface Listen {
  /** Gives up waiting after this long (measured from the start of listening). Default: never. */
  timeoutMs?: number;
  on?: Rule[];
  /** Runs when an utterance matches no rule. Without it, unmatched input is ignored. */
  otherwise?: Step[];
  /** Runs when timeoutMs passes with no matching input. */
  timeout?: Step[];
  /**
   * Only what is heard from the start of this listen counts: words and keys that came while the
   * persona was still talking are dropped (a speech menu does not take what was said over its
   * prompt for an answer). Default: they count.
   */
  fresh?: true;
}

export type Step =
  /** Says a line; a list of lines is said in turn, one per visit. */
  | { say: string | string[] }
  | { pause: number }
  | { tone: { frequencyHz: number; durationMs: number } }
  | { listen: Listen }
  /** Records what the other side says until silenceTimeoutMs of silence (or maxMs in all). */
  | { record: { silenceTimeoutMs: number; maxMs?: number } }
  | { repeat: { times: number; steps: Step[] } }
  | { goto: string }
  /** Another persona takes over the line (at its start state unless `state` says otherwise). */
  | { become: string; state?: string }
  /**
   * Says the line a program writes for this persona from the conversation so far (the sandbox
   * network's line writer for the persona's id: a caller driven by a language model), or hangs
   * up when the writer says so.
   */
  | { improvise: true }
  | { hangup: true };

export interface Persona {
  id: string;
  /** Last four digits of the +1 NPA 555-XXXX numbers this persona answers. */
  number?: string;
  name: string;
  description: string;
  ring: RingBehaviour;
  /** Thinking time before reacting to what was heard. Default 500. */
  replyDelayMs?: number;
  /** espeak-ng voice in the sandbox's audio mode ("en-us+f2"); default: one per built-in persona. */
  voice?: string;
  /**
   * Audio mode: the persona's line returns the agent's own voice, `gainDb` quieter (negative) and
   * `delayMs` late, mixed under whatever the persona says (a speakerphone, a hybrid echo).
   */
  echo?: { gainDb: number; delayMs: number };
  /** Required when the persona answers. */
  start?: string;
  /** Where the persona starts when it places an inbound call (`POST /v1/sandbox/inbound`); default `start`. */
  inboundStart?: string;
  states?: Record<string, Step[]>;
}

/** The file a persona was loaded from, for messages. */
export interface LoadedPersona extends Persona {
  source: string;
}

export class PersonaFileError extends Error {
  constructor(
    readonly file: string,
    readonly path: string,
    detail: string,
  ) {
    super(`Invalid persona file ${file}: ${path ? `${path}: ` : ''}${detail}`);
    this.name = 'PersonaFileError';
  }
}

const Ms = Type.Number({ minimum: 0 });
const Steps = Type.Array(Type.Unknown());

const PersonaShape = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    id: Type.String({ pattern: '^[a-z0-9][a-z0-9-]*$' }),
    number: Type.Optional(Type.String({ pattern: '^[0-9]{4}$' })),
    name: Type.String({ minLength: 1 }),
    description: Type.String(),
    ring: Type.Object({ kind: Type.String() }),
    replyDelayMs: Type.Optional(Ms),
    voice: Type.Optional(Type.String({ pattern: '^[a-z]{2,3}(-[a-z0-9-]+)?(\\+[a-z0-9]+)?$' })),
    echo: Type.Optional(
      Type.Object(
        { gainDb: Type.Number({ minimum: -60, maximum: 0 }), delayMs: Type.Number({ minimum: 20, maximum: 1000 }) },
        { additionalProperties: false },
      ),
    ),
    start: Type.Optional(Type.String()),
    inboundStart: Type.Optional(Type.String()),
    states: Type.Optional(Type.Record(Type.String(), Steps)),
  },
  { additionalProperties: false },
);

const closed = { additionalProperties: false } as const;

const RING: Record<string, TSchema> = {
  answer: Type.Object({ kind: Type.Literal('answer'), afterMs: Ms }, closed),
  'no-answer': Type.Object({ kind: Type.Literal('no-answer'), ringMs: Ms }, closed),
  busy: Type.Object({ kind: Type.Literal('busy') }, closed),
  unreachable: Type.Object({ kind: Type.Literal('unreachable'), reason: Type.String({ minLength: 1 }) }, closed),
};

/** Each step is an object named by its one key; nested step lists are checked by the walker. */
const STEP: Record<string, TSchema> = {
  say: Type.Object(
    { say: Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })]) },
    closed,
  ),
  pause: Type.Object({ pause: Ms }, closed),
  tone: Type.Object(
    { tone: Type.Object({ frequencyHz: Type.Number({ exclusiveMinimum: 0 }), durationMs: Ms }, closed) },
    closed,
  ),
  listen: Type.Object(
    {
      listen: Type.Object(
        {
          timeoutMs: Type.Optional(Ms),
          on: Type.Optional(Steps),
          otherwise: Type.Optional(Steps),
          timeout: Type.Optional(Steps),
          fresh: Type.Optional(Type.Literal(true)),
        },
        closed,
      ),
    },
    closed,
  ),
  record: Type.Object({ record: Type.Object({ silenceTimeoutMs: Ms, maxMs: Type.Optional(Ms) }, closed) }, closed),
  repeat: Type.Object({ repeat: Type.Object({ times: Type.Integer({ minimum: 1 }), steps: Steps }, closed) }, closed),
  goto: Type.Object({ goto: Type.String() }, closed),
  become: Type.Object({ become: Type.String(), state: Type.Optional(Type.String()) }, closed),
  improvise: Type.Object({ improvise: Type.Literal(true) }, closed),
  hangup: Type.Object({ hangup: Type.Literal(true) }, closed),
};

const RuleShape = Type.Object(
  {
    keywords: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    regex: Type.Optional(Type.String({ minLength: 1 })),
    digits: Type.Optional(Type.String({ pattern: '^[0-9*#A-D]+$' })),
    speechStart: Type.Optional(Type.Literal(true)),
    any: Type.Optional(Type.Literal(true)),
    exchangesAtLeast: Type.Optional(Type.Integer({ minimum: 1 })),
    do: Steps,
  },
  closed,
);

type Check = (path: string, detail: string) => never;

function checkShape(schema: TSchema, value: unknown, path: string, fail: Check): void {
  const error = Value.Errors(schema, value).First();
  if (error) fail(`${path}${error.path}`, error.message);
}

/** Checks one persona's JSON; returns it typed, or throws PersonaFileError naming file and field. */
export function parsePersona(json: unknown, file: string): LoadedPersona {
  const fail: Check = (path, detail) => {
    throw new PersonaFileError(file, path, detail);
  };
  if (!isRecord(json)) fail('', 'a persona file holds one JSON object');
  checkShape(PersonaShape, json, '', fail);
  const persona = json as unknown as Persona;
  const ringKind = persona.ring.kind;
  const ringSchema = RING[ringKind];
  if (!ringSchema) fail('/ring/kind', `must be one of ${Object.keys(RING).join(', ')}`);
  checkShape(ringSchema, persona.ring, '/ring', fail);

  const states = persona.states ?? {};
  if (ringKind === 'answer') {
    if (persona.start === undefined) fail('/start', 'a persona that answers needs a start state');
    if (!persona.states) fail('/states', 'a persona that answers needs states');
  }
  if (persona.start !== undefined && !(persona.start in states)) {
    fail('/start', `no state named "${persona.start}"`);
  }
  if (persona.inboundStart !== undefined && !(persona.inboundStart in states)) {
    fail('/inboundStart', `no state named "${persona.inboundStart}"`);
  }

  const checkSteps = (steps: unknown[], path: string): void =>
    steps.forEach((step, index) => checkStep(step, `${path}/${index}`));

  const checkStep = (step: unknown, path: string): void => {
    const kind = isRecord(step) ? Object.keys(step).find((key) => key in STEP) : undefined;
    if (!isRecord(step) || kind === undefined) {
      return fail(path, `a step is an object with one of: ${Object.keys(STEP).join(', ')}`);
    }
    checkShape(STEP[kind] as TSchema, step, path, fail);
    const typed = step as Step;
    if ('goto' in typed && !(typed.goto in states)) fail(`${path}/goto`, `no state named "${typed.goto}"`);
    if ('repeat' in typed) checkSteps(typed.repeat.steps, `${path}/repeat/steps`);
    if ('listen' in typed) {
      const { on = [], otherwise = [], timeout = [] } = typed.listen;
      on.forEach((rule, index) => checkRule(rule, `${path}/listen/on/${index}`));
      checkSteps(otherwise, `${path}/listen/otherwise`);
      checkSteps(timeout, `${path}/listen/timeout`);
    }
  };

  const checkRule = (rule: unknown, path: string): void => {
    checkShape(RuleShape, rule, path, fail);
    const typed = rule as Rule;
    const triggers = ['keywords', 'regex', 'digits', 'speechStart', 'any', 'exchangesAtLeast'] as const;
    if (!triggers.some((key) => typed[key] !== undefined)) fail(path, `a rule needs one of: ${triggers.join(', ')}`);
    if (typed.digits !== undefined && triggers.some((key) => key !== 'digits' && typed[key] !== undefined)) {
      fail(path, 'digits cannot be combined with speech triggers');
    }
    if (typed.regex !== undefined) {
      try {
        new RegExp(typed.regex, 'i');
      } catch (error) {
        fail(`${path}/regex`, (error as Error).message);
      }
    }
    checkSteps(typed.do, `${path}/do`);
  };

  for (const [name, steps] of Object.entries(states)) checkSteps(steps, `/states/${name}`);
  return { ...persona, source: file };
}

/** Persona ids of every `become` in the persona, with where they are, for cross-file checks. */
function becomes(persona: Persona): { id: string; state?: string }[] {
  const found: { id: string; state?: string }[] = [];
  const walk = (steps: Step[]): void => {
    for (const step of steps) {
      if ('become' in step) found.push({ id: step.become, state: step.state });
      if ('repeat' in step) walk(step.repeat.steps);
      if ('listen' in step) {
        for (const rule of step.listen.on ?? []) walk(rule.do);
        walk(step.listen.otherwise ?? []);
        walk(step.listen.timeout ?? []);
      }
    }
  };
  for (const steps of Object.values(persona.states ?? {})) walk(steps);
  return found;
}

/** The number whose persona answers any number that no persona claims. */
export const DEFAULT_PERSONA_NUMBER = '0100';

/** Personas by id and by the number they answer. */
export class PersonaSet {
  private readonly byId = new Map<string, LoadedPersona>();
  private readonly byNumber = new Map<string, LoadedPersona>();

  /** Later personas replace earlier ones with the same id or number. Throws if a `become` dangles. */
  constructor(personas: LoadedPersona[]) {
    for (const persona of personas) {
      const previous = this.byId.get(persona.id);
      if (previous?.number !== undefined && this.byNumber.get(previous.number) === previous) {
        this.byNumber.delete(previous.number);
      }
      this.byId.set(persona.id, persona);
      if (persona.number !== undefined) this.byNumber.set(persona.number, persona);
    }
    for (const persona of this.byId.values()) {
      for (const { id, state } of becomes(persona)) {
        const target = this.byId.get(id);
        if (!target) throw new PersonaFileError(persona.source, '', `becomes unknown persona "${id}"`);
        if (state !== undefined && !(state in (target.states ?? {}))) {
          throw new PersonaFileError(persona.source, '', `persona "${id}" has no state "${state}"`);
        }
        if (!target.start) throw new PersonaFileError(persona.source, '', `persona "${id}" does not answer`);
      }
    }
    if (!this.byNumber.has(DEFAULT_PERSONA_NUMBER)) {
      throw new Error(`the personas must include one for number ${DEFAULT_PERSONA_NUMBER}, the default`);
    }
  }

  list(): LoadedPersona[] {
    return [...this.byId.values()];
  }

  get(id: string): LoadedPersona | undefined {
    return this.byId.get(id);
  }

  /**
   * The persona of a phone number: +1, any area code, exchange 555, then the persona's four
   * digits. Every other number gets the default persona (0100).
   */
  forNumber(phone: string): LoadedPersona {
    const digits = phone.replace(/\D/g, '');
    const suffix = /^1?\d{3}555(\d{4})$/.exec(digits)?.[1];
    const persona = suffix === undefined ? undefined : this.byNumber.get(suffix);
    return persona ?? (this.byNumber.get(DEFAULT_PERSONA_NUMBER) as LoadedPersona);
  }
}

/** The personas of the CONTRACT's number table, shipped with the server. */
export const BUILTIN_PERSONA_DIR = fileURLToPath(new URL('./personas/', import.meta.url));

/** Reads and checks every *.json file of one directory, in name order. */
export function readPersonaDir(dir: string): LoadedPersona[] {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort();
  const personas = files.map((name) => {
    const file = join(dir, name);
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new PersonaFileError(file, '', `not valid JSON (${(error as Error).message})`);
    }
    return parsePersona(json, file);
  });
  const seen = new Map<string, string>();
  for (const persona of personas) {
    const other = seen.get(persona.id);
    if (other)
      throw new PersonaFileError(persona.source, '/id', `"${persona.id}" is also the id of ${basename(other)}`);
    seen.set(persona.id, persona.source);
  }
  return personas;
}

/**
 * Loads the built-in personas, then each directory of `dirs` in order; a persona with the same id
 * or number as an earlier one replaces it, so a user directory can both add and override.
 */
export function loadPersonas(dirs: string[] = [], options: { builtins?: boolean } = {}): PersonaSet {
  const all = [...(options.builtins === false ? [] : [BUILTIN_PERSONA_DIR]), ...dirs];
  return new PersonaSet(all.flatMap(readPersonaDir));
}
