/**
 * Phone menus as they are heard: the options of a menu by key, whether a line is a menu, a hold
 * message, a recorded announcement or a person, and which option serves a goal. Pure rules: the
 * call session decides when a menu is complete, the agents decide what to press with these.
 */

/** One option of a menu: a key to press, or (`spoken`) words to say. */
export interface MenuOption {
  /** The key ("1", "*", "#"), or for a spoken option the words to say ("billing"). */
  key: string;
  /** What the option is for, as heard ("refill a prescription"). */
  label: string;
  /** A speech menu's option: the agent says `key` instead of pressing it. */
  spoken: boolean;
  /** Moves around the menu itself (repeat, previous or main menu): never a destination. */
  navigation: boolean;
}

/** A prompt to type something in: "enter your account number followed by the pound key". */
export interface EntryPrompt {
  /** What is asked for, as heard ("account number"). */
  field: string;
  /** The key that ends the entry ("#"), or "" when none is asked for. */
  terminator: string;
}

export interface Menu {
  /** Options in the order heard, one per key (the first wording of a key wins). */
  options: MenuOption[];
  entry?: EntryPrompt;
  /** The menu offers to repeat itself: it has been said in full. */
  offersRepeat: boolean;
}

const NUMBER_WORDS: Record<string, string> = {
  zero: '0',
  oh: '0',
  one: '1',
  two: '2',
  three: '3',
  four: '4',
  five: '5',
  six: '6',
  seven: '7',
  eight: '8',
  nine: '9',
  cero: '0',
  uno: '1',
  dos: '2',
  tres: '3',
  cuatro: '4',
  cinco: '5',
  seis: '6',
  siete: '7',
  ocho: '8',
  nueve: '9',
  star: '*',
  asterisk: '*',
  asterisco: '*',
  estrella: '*',
  pound: '#',
  hash: '#',
  numeral: '#',
  gato: '#',
};
const KEY_WORD = Object.keys(NUMBER_WORDS).join('|');
/** Verbs that name a key to press, in English and Spanish. */
const KEY_VERB =
  'press|dial|push|select|enter|hit|touch|choose|oprima|oprime|marque|marca|pulse|pulsa|presione|presiona|digite|seleccione';
/** What may stand between the verb and the key: "press the number 1", "oprima la tecla 2". */
const KEY_FILLER = '(?:the\\s+)?(?:number\\s+|digit\\s+|key\\s+)?(?:la\\s+tecla\\s+|el\\s+(?:número\\s+)?)?';

/**
 * "nine to five", "8 to 6": a range (opening hours), not an option, which names what it is for
 * ("2 to speak with a nurse").
 */
const NOT_A_RANGE =
  '(?!\\s+(?:[0-9]|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|noon|midnight)\\b)';

/** Key words after a verb or in a list ("press one", ", two for") become the key itself. */
function normalizeKeys(text: string): string {
  return text
    .replace(/[“”"]/g, '')
    .replace(/[‘’]/g, "'")
    .replace(/\s+/g, ' ')
    .replace(
      new RegExp(`\\b(${KEY_VERB})\\s+${KEY_FILLER}(${KEY_WORD})(?:\\s+(?:key|sign|button))?\\b`, 'gi'),
      (_m, verb: string, word: string) => `${verb} ${NUMBER_WORDS[word.toLowerCase()]}`,
    )
    .replace(
      new RegExp(`(^|,|;|\\bor\\b|\\band\\b|\\bo\\b|\\by\\b)\\s*(${KEY_WORD})\\s+(for|to|para)\\b${NOT_A_RANGE}`, 'gi'),
      (_m, before: string, word: string, link: string) => `${before} ${NUMBER_WORDS[word.toLowerCase()]} ${link}`,
    )
    .replace(
      /\b(followed by|then press|ending with|then|seguido de(?:l)?(?:\s+la\s+tecla)?)\s+(?:the\s+)?(pound|hash|star|numeral|asterisco|gato|estrella)(?:\s+(?:key|sign))?/gi,
      (_m, v: string, w: string) => `${v} ${NUMBER_WORDS[w.toLowerCase()]}`,
    );
}

const KEY_MENTION = new RegExp(
  `\\b(?:${KEY_VERB})\\s+${KEY_FILLER}([0-9*#])(?![0-9])|(?:^|,|\\bor\\b|\\band\\b|\\bo\\b|\\by\\b)\\s*([0-9*#])\\s+(?=(?:for|to|para)\\b${NOT_A_RANGE})`,
  'giu',
);

/** Words that lead into an option's label and say nothing of it. */
const LEAD_IN = new RegExp(
  [
    '^(?:and|or|o|y|now|please|then|also|at any time|anytime)\\b\\s*',
    '^(?:for|to|para|si)\\b\\s*',
    "^if\\s+(?:you(?:'re|\\s+are)\\s+calling\\s+(?:about|regarding|to|for|from)|you(?:'d|\\s+would)\\s+like\\s+to|you\\s+want\\s+to|you\\s+need\\s+to|you\\s+(?:have|have\\s+a)\\s+(?:question|questions)\\s+(?:about|on|regarding)|you\\s+are\\s+calling|you(?:'re|\\s+are)|you\\s+have|you)\\b\\s*",
    '^(?:llama\\s+(?:por|para)|desea)\\b\\s*',
    '^(?:the|a|an|our|your)\\s+(?=\\w)',
  ].join('|'),
  'i',
);

function cleanLabel(raw: string): string {
  let label = raw
    .replace(/^[\s,;:-]+|[\s,;:-]+$/g, '')
    .replace(/[\s,]+(?:or|and|o|y)$/i, '')
    .replace(/\s+(?:now|at any time|anytime)$/i, '')
    .trim();
  for (let i = 0; i < 4; i++) {
    const next = label.replace(LEAD_IN, '').trim();
    if (next === label) break;
    label = next;
  }
  return label.replace(/[\s,]+(?:please|or|and)$/i, '').trim();
}

const NAVIGATION =
  /\b(repeat|hear (?:these|this|the|those) (?:options|menu|again)|previous menu|main menu|go back|start over|repetir|menú (?:principal|anterior))\b/i;
const ENTRY = new RegExp(
  `\\b(?:please\\s+)?(?:enter|key in|type in|input|say or enter|enter or say|ingrese|marque|digite)\\s+(?:your|the|su)\\s+((?:[\\w'-]+\\s+){0,5}?(?:number|id|code|pin|zip code|zip|date of birth|birth ?date|extension|digits|cuenta|número(?:\\s+de\\s+\\w+)?))\\b(?:[^.;]*?\\b(?:followed by|then|ending with|seguido de(?:l)?(?:\\s+la\\s+tecla)?)\\s+(?:press\\s+|oprima\\s+|marque\\s+)?([#*]))?`,
  'iu',
);

/** "10-digit", "five digit": how long an entry is, not what it is. */
const DIGIT_COUNT = /\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)[- ]digit\s+/i;

/** A sentence that names spoken options: "Please say billing, pharmacy, or appointments." */
const SAY_LIST =
  /^(?:please\s+|you can\s+|just\s+|simply\s+|or\s+)?say\s+(?:things like\s+|something like\s+|one of the following[:,]?\s+)?(.+)$/i;

function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?;:])\s+|\n+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The options, entry prompt and repeat offer of what a menu said (one line or many). */
export function parseMenu(text: string): Menu {
  const options: MenuOption[] = [];
  let offersRepeat = false;
  let entry: EntryPrompt | undefined;
  const add = (option: MenuOption): void => {
    if (option.label === '' && !option.spoken) return;
    // "If this is an emergency, please hang up and dial nine one one": a way out of the call, not
    // one of the menu's options (a closed office's recording says it with no menu at all).
    if (/\bhang up\b/i.test(option.label)) return;
    if (option.navigation) offersRepeat ||= /repeat|hear|repetir/i.test(option.label);
    if (!options.some((o) => o.key === option.key && o.spoken === option.spoken)) options.push(option);
  };
  // "Having trouble with your internet? Press 3.": a question names the option of the key after it.
  let question = '';
  for (const raw of sentences(text)) {
    const asked = question;
    question = raw.endsWith('?') ? raw.slice(0, -1) : '';
    const sentence = normalizeKeys(raw).replace(/[.!?;:]+$/, '');
    const mentions = [...sentence.matchAll(KEY_MENTION)].map((m) => ({
      key: (m[1] ?? m[2])!,
      start: m.index!,
      end: m.index! + m[0].length,
    }));
    const found = ENTRY.exec(sentence);
    if (found) entry = { field: found[1]!.replace(DIGIT_COUNT, '').trim(), terminator: found[2] ?? '' };
    mentions.forEach((mention, i) => {
      const after = sentence.slice(mention.end, mentions[i + 1]?.start ?? sentence.length);
      const before = sentence.slice(mentions[i - 1]?.end ?? 0, mention.start);
      const backward = cleanLabel(before.replace(/\bsay\s+(.+?)\s+or\s*$/i, '$1'));
      // "press 1 for sales" / "press 0 at any time to speak with an operator" name the option after
      // the key; "For sales, press 1" before it. "For billing, press 1, for support, press 2": the
      // words before win over a comma's "for" after.
      const direct = /^\s*(?:now\s+|at any time\s+|anytime\s+)?(?:for|to|if|para|si)\b/i.test(after);
      const comma = /^\s*,\s*(?:for|to|if|para|si)\b/i.test(after);
      // An entry prompt's "then press pound" ends the entry: it is no option.
      if (found && !direct && !comma) return;
      let label = direct || (comma && backward === '') ? cleanLabel(after) : backward;
      if (label === '' && i === 0) label = cleanLabel(asked);
      add({ key: mention.key, label, spoken: false, navigation: NAVIGATION.test(label) });
    });
    if (NAVIGATION.test(sentence) && /\b(repeat|hear|repetir)\b/i.test(sentence)) offersRepeat = true;
    const said = mentions.length === 0 ? SAY_LIST.exec(sentence) : null;
    if (said) {
      const labels = said[1]!
        .split(/\s*,\s*(?:or\s+)?|\s+or\s+/i)
        .map((l) => l.replace(/^['‘]|['’]$/g, '').trim())
        .filter((l) => l !== '' && l.split(/\s+/).length <= 5);
      // One phrase alone ("say your name") is a question, not a menu: a speech menu offers a choice.
      if (labels.length >= 2)
        for (const label of labels) add({ key: label, label, spoken: true, navigation: NAVIGATION.test(label) });
    }
  }
  return { options, ...(entry && { entry }), offersRepeat };
}

/** The transcript's note when a person picks up after a menu: the agent greets them with the task. */
export const PERSON_AFTER_MENU = 'A person answered after the phone menu: greet them and say why you are calling';
/** The same note when a person picks up after a call screener. */
export const PERSON_AFTER_SCREENER =
  'A person answered after the call screener: greet them and say why you are calling';

/** What kind of line a caller's recording or person said, while a menu is being navigated. */
export type MenuLineKind = 'menu' | 'hold' | 'announcement' | 'person';

const HOLD =
  /\b(please (?:hold|stay on the line|remain on the line|continue to hold|wait)|hold (?:on|please)|while (?:we|i) (?:connect|transfer)|(?:transferring|connecting) (?:your call|you)|one moment|your call is (?:important|being transferred)|(?:all|our) (?:of our )?(?:representatives|agents|associates|lines|team members|pharmacists|nurses) are (?:currently )?(?:busy|assisting|helping)|next available|estimated wait|wait time|in (?:the )?queue|por favor espere|espere un momento)\b/i;
const PERSON =
  /\b(how (?:can|may|might) i (?:help|assist)|what can i do for you|this is [a-z]+[,.]|this is [a-z]+ (?:speaking|in|with|at|from|here)|[a-z]+ speaking\b|who am i speaking|my name is|¿?en qué (?:le )?puedo ayudar)/i;
const GREETING = /^(?:hello|hi|hey|hiya|yes|yeah|good (?:morning|afternoon|evening)|hola|buenos días|buenas tardes)\b/i;

/** Whether what was said is a menu by its structure: options with keys, an entry prompt, or spoken choices. */
export function isMenu(text: string): boolean {
  const menu = parseMenu(text);
  if (menu.entry || menu.options.some((o) => !o.spoken)) return true;
  if (menu.options.length >= 2) return true;
  return /\b(main menu|dial (?:the|your) (?:party's )?extension|if you know your party's extension)\b/i.test(text);
}

/**
 * The kind of one line heard on a menu's line: the next menu, hold, a recording, or a person. A
 * person who picks up greets or asks ("Hello?", "this is Dana, how can I help you?"); a
 * recording states ("Okay, technical support."), so a line that does neither is a recording.
 */
export function menuLineKind(text: string): MenuLineKind {
  if (isMenu(text)) return 'menu';
  const greets = GREETING.test(text) && !/\b(thank|thanks|welcome|you(?:'ve| have) reached)\b/i.test(text);
  if (PERSON.test(text) || greets || text.includes('?')) return 'person';
  if (HOLD.test(text)) return 'hold';
  return 'announcement';
}

/**
 * Whether `line` starts the menu again: one of its options repeats a key already heard with the
 * same wording (a menu that repeats without a pause long enough to tell).
 */
export function repeatsMenu(heard: string, line: string): boolean {
  const before = parseMenu(heard).options;
  return parseMenu(line).options.some((o) => before.some((b) => b.key === o.key && b.label === o.label));
}

// --- Choosing -------------------------------------------------------------------------------

const STOP = new Set(
  (
    'a an the to for of and or in on at by with is are be you your me my i we our it this that press please from ' +
    'about if call calling called ask asking question questions need want like would speak talk reach get make ' +
    'know find them they their its has have had do does will can could should may might just also other ' +
    'someone somebody help please line phone number today tomorrow now new here there what when where how why ' +
    'who which then than so as up out all any some more most one two three four five six seven eight nine zero ' +
    'name is was were been being am dial enter hold wait listen option options menu follow following etc'
  ).split(' '),
);

/** A light stemmer: the same word in its usual forms meets itself ("refills", "refilling", "refill"). */
export function stem(word: string): string {
  let w = word.toLowerCase().replace(/'s$/, '');
  if (w.length > 4 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`;
  for (const suffix of ['ments', 'ment', 'ings', 'ing', 'ions', 'ion', 'ed', 'es', 's']) {
    if (w.length - suffix.length >= 3 && w.endsWith(suffix) && !w.endsWith('ss')) {
      w = w.slice(0, -suffix.length);
      break;
    }
  }
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  return w;
}

function stems(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9áéíóúñ]+/)
    .filter((w) => w.length > 1 && !STOP.has(w))
    .map(stem);
}

/**
 * The departments phone menus route to, each with words (stemmed when matched) that point to it.
 * A label and a goal that share a department match even when they share no word.
 */
const INTENTS: Record<string, string[]> = {
  billing: [
    'bill',
    'billing',
    'payment',
    'pay',
    'balance',
    'invoice',
    'charge',
    'statement',
    'autopay',
    'due',
    'factura',
    'pago',
    'fee',
  ],
  pharmacy: [
    'pharmacy',
    'pharmacist',
    'prescription',
    'refill',
    'rx',
    'medication',
    'medicine',
    'drug',
    'farmacia',
    'receta',
  ],
  appointments: [
    'appointment',
    'schedule',
    'scheduling',
    'book',
    'booking',
    'reschedule',
    'visit',
    'cita',
    'checkup',
    'exam',
  ],
  support: [
    'support',
    'technical',
    'tech',
    'troubleshoot',
    'outage',
    'repair',
    'internet',
    'broken',
    'problem',
    'issue',
    'working',
    'down',
    'wifi',
    'modem',
    'router',
    'fix',
    'soporte',
  ],
  sales: [
    'sales',
    'buy',
    'purchase',
    'pricing',
    'price',
    'quote',
    'upgrade',
    'sign',
    'signup',
    'offer',
    'ventas',
    'shop',
  ],
  claims: ['claim', 'claims', 'accident', 'damage', 'collision', 'reclamo', 'loss'],
  account: ['account', 'profile', 'password', 'login', 'username', 'cuenta', 'address'],
  orders: [
    'order',
    'shipping',
    'delivery',
    'track',
    'tracking',
    'package',
    'return',
    'refund',
    'exchange',
    'shipment',
    'pedido',
  ],
  cards: ['card', 'debit', 'credit', 'stolen', 'fraud', 'pin', 'tarjeta'],
  loans: ['loan', 'mortgage', 'lending', 'financing', 'préstamo'],
  reservations: ['reservation', 'flight', 'ticket', 'booking', 'trip', 'itinerary', 'seat', 'reserva', 'vuelo'],
  baggage: ['baggage', 'bag', 'luggage', 'suitcase', 'equipaje'],
  medical: ['nurse', 'doctor', 'medical', 'symptom', 'clinical', 'physician', 'health', 'sick'],
  records: ['record', 'records', 'transcript', 'document', 'copy'],
  enrollment: [
    'enroll',
    'enrollment',
    'admission',
    'admissions',
    'apply',
    'application',
    'registration',
    'register',
    'inscripción',
  ],
  attendance: ['attendance', 'absence', 'absent', 'late', 'tardy', 'excuse', 'sick', 'miss'],
  licenses: ['license', 'licence', 'permit', 'renew', 'renewal', 'vehicle', 'registration', 'dmv', 'licencia'],
  service: ['start', 'stop', 'transfer', 'move', 'moving', 'connect', 'disconnect', 'service', 'servicio'],
  emergency: ['emergency', 'leak', 'gas', 'downed', 'emergencia'],
  hours: ['hours', 'location', 'directions', 'open', 'address', 'horario'],
  operator: [
    'operator',
    'representative',
    'agent',
    'associate',
    'person',
    'attendant',
    'receptionist',
    'live',
    'human',
    'operadora',
    'representante',
  ],
};
/** A label for the one who calls on behalf of others (doctors' offices, providers, brokers): a trap for a patient's errand. */
const CALLER_ROLE =
  /\b(providers?|physician'?s? office|doctor'?s'? office|prescribers?|healthcare professionals?|brokers?|agents? calling|body shops?|vendors?|employers?|media|press inquiries)\b|(?:insurance|independent) agents?\b/i;
const CATCH_ALL =
  /\b(all other|other (?:questions|inquiries|requests|matters)|anything else|everything else|general (?:questions|inquiries)|customer service|otras? (?:preguntas|consultas))\b/i;

const INTENT_STEMS: Record<string, Set<string>> = Object.fromEntries(
  Object.entries(INTENTS).map(([intent, list]) => [intent, new Set(list.map(stem))]),
);

function intentsOf(words: string[]): Set<string> {
  const found = new Set<string>();
  for (const [intent, set] of Object.entries(INTENT_STEMS)) if (words.some((w) => set.has(w))) found.add(intent);
  return found;
}

/** Whether the option reaches a person or "all other questions": the fallback, never a first choice. */
export function isFallbackOption(option: MenuOption): boolean {
  if (option.navigation || CALLER_ROLE.test(option.label)) return false;
  return CATCH_ALL.test(option.label) || intentsOf(stems(option.label)).has('operator');
}

/** Language options ("For English, press 1", "Para español, oprima 2") by the call's language. */
const LANGUAGE_NAMES: Record<string, RegExp> = {
  en: /\b(english|inglés|ingles)\b/i,
  es: /\b(spanish|español|espanol)\b/i,
  fr: /\b(french|français|francais)\b/i,
  de: /\b(german|deutsch)\b/i,
  pt: /\b(portuguese|português|portugues)\b/i,
  zh: /\b(chinese|mandarin|cantonese)\b/i,
  vi: /\b(vietnamese)\b/i,
  ko: /\b(korean)\b/i,
};

/** The features an option shares with the goal: stemmed words, and departments (counted twice). */
function sharedFeatures(option: MenuOption, wanted: Set<string>, goalIntents: Set<string>): string[] {
  const label = stems(option.label);
  const words = [...new Set(label.filter((w) => wanted.has(w)))].map((w) => `w:${w}`);
  const intents = [...intentsOf(label)].filter((i) => i !== 'operator' && goalIntents.has(i)).map((i) => `i:${i}`);
  return [...words, ...intents];
}

export interface MenuChoice {
  option: MenuOption;
  /**
   * `match`: the option serves the goal; `language`: the call's language; `fallback`: nothing
   * did, so the operator or "all other questions".
   */
  why: 'match' | 'language' | 'fallback';
}

/**
 * The option of a complete menu that serves `goal` (the task and the call's data). Each word or
 * department the option shares with the goal counts (a department twice), divided by how many
 * options share it: "flight" in "book a new flight" and "flight status" tells little, "luggage"
 * in one option much. A label for callers on behalf of others (providers, agents) counts against.
 * Then a language option in the call's language; then the operator or "all other questions";
 * else none (nothing is pressed: the menu repeats, or a person comes on). A key the menu did not
 * offer is never chosen.
 */
export function chooseOption(
  menu: Menu,
  goal: string,
  options: {
    /** The call's language (BCP 47): picks a language menu's option. Default "en". */
    language?: string;
    /** Words that do not tell departments apart: the name of the company called (see companyWords). */
    ignore?: readonly string[];
  } = {},
): MenuChoice | undefined {
  const candidates = menu.options.filter((o) => !o.navigation);
  const ignored = new Set((options.ignore ?? []).map(stem));
  const wanted = new Set(stems(goal).filter((w) => !ignored.has(w)));
  const goalIntents = intentsOf([...wanted]);
  const features = candidates.map((o) => sharedFeatures(o, wanted, goalIntents));
  const share = new Map<string, number>();
  for (const list of features) for (const f of list) share.set(f, (share.get(f) ?? 0) + 1);
  let best: { option: MenuOption; score: number } | undefined;
  candidates.forEach((option, i) => {
    let score = features[i]!.reduce((sum, f) => sum + (f.startsWith('i:') ? 2 : 1) / share.get(f)!, 0);
    if (CALLER_ROLE.test(option.label) && !CALLER_ROLE.test(goal)) score -= 3;
    if (isFallbackOption(option)) score -= 0.25;
    if (score > 0 && (!best || score > best.score)) best = { option, score };
  });
  if (best) return { option: best.option, why: 'match' };
  const spoken = LANGUAGE_NAMES[(options.language ?? 'en').toLowerCase().slice(0, 2)];
  const native = spoken && candidates.find((o) => spoken.test(o.label));
  if (native) return { option: native, why: 'language' };
  const fallback = candidates.find(isFallbackOption);
  return fallback ? { option: fallback, why: 'fallback' } : undefined;
}

/**
 * The proper names in what a menu's recordings said ("Thank you for calling Northfield Power."):
 * capitalised words that do not start a sentence. A task naming the company it calls does not
 * point to the option that repeats the company's name ("downed power lines").
 */
export function companyWords(text: string): string[] {
  const found: string[] = [];
  for (const sentence of sentences(text)) {
    const words = sentence.split(/\s+/).slice(1);
    for (const word of words) {
      const clean = word.replace(/[^\p{L}'-]/gu, '');
      if (/^\p{Lu}/u.test(clean) && clean.length > 1) found.push(clean.toLowerCase());
    }
  }
  return found;
}

// --- Data entry -----------------------------------------------------------------------------

const FIELD_ALIASES: [RegExp, string[]][] = [
  [/date of birth|birth ?date|birthday/i, ['dob', 'dateofbirth', 'birthdate', 'birthday']],
  [/zip|postal/i, ['zip', 'zipcode', 'postalcode', 'postcode']],
  [/phone|telephone/i, ['phone', 'phonenumber', 'callbacknumber', 'telephone']],
  [/social|ssn/i, ['ssn', 'ssnlast4', 'last4', 'social']],
  [/prescription|rx/i, ['rx', 'rxnumber', 'prescription', 'prescriptionnumber']],
  [/last (?:four|4)/i, ['last4', 'lastfour', 'cardlast4', 'cardlastfour', 'lastfourdigits']],
];

const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');

/**
 * The digits to type for an entry prompt, from the call's data: a field whose name matches what
 * is asked ("account number" finds `account_number`, `accountNumber` or `account`), its digits.
 */
export function entryDigits(entry: EntryPrompt, data: Record<string, unknown>): string | undefined {
  const core = entry.field
    .toLowerCase()
    .replace(/'s\b/g, '')
    .replace(/\b(your|the|su|number|numero|número|de|digits?|\d+[- ]digit)\b/g, ' ')
    .trim();
  const names = new Set([norm(entry.field), norm(core), `${norm(core)}number`, `${norm(core)}id`, `${norm(core)}no`]);
  for (const [pattern, aliases] of FIELD_ALIASES) if (pattern.test(entry.field)) aliases.forEach((a) => names.add(a));
  names.delete('');
  for (const [name, value] of Object.entries(data)) {
    if (!names.has(norm(name))) continue;
    const digits = (typeof value === 'number' ? String(value) : typeof value === 'string' ? value : '').replace(
      /\D/g,
      '',
    );
    if (digits) return digits;
  }
  return undefined;
}
