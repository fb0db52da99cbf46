/** The seed's `language` values (2.1), shared by calls, inbound numbers and agents. */
export const LANGUAGES = [
  'en',
  'en-US',
  'en-GB',
  'zh',
  'zh-CN',
  'zh-Hans',
  'zh-TW',
  'zh-Hant',
  'es',
  'fr',
  'de',
  'hi',
  'ja',
  'ko',
  'pt',
  'it',
  'nl',
  'pl',
  'ru',
  'sv',
  'da',
  'id',
  'ms',
  'tr',
  // Beyond the seed's list: the further languages and regions the hosted API accepts.
  'en-AU',
  'en-NZ',
  'en-IN',
  'es-419',
  'fr-CA',
  'de-CH',
  'pt-BR',
  'pt-PT',
  'ko-KR',
  'nl-BE',
  'sv-SE',
  'da-DK',
  'zh-HK',
  'el',
  'fi',
  'uk',
  'bg',
  'cs',
  'ro',
  'sk',
  'no',
  'vi',
  'th',
  'hu',
  'ca',
  'et',
  'lv',
  'lt',
  'ar',
  'he',
  'ta',
] as const;
export type LanguageCode = (typeof LANGUAGES)[number];

/**
 * The hosted service's legacy three-letter codes (its call records still echo `ENG`), and the
 * ISO 639-2 forms clients send for the same languages.
 */
const LEGACY: Record<string, LanguageCode> = {
  eng: 'en',
  esp: 'es',
  spa: 'es',
  fre: 'fr',
  fra: 'fr',
  ger: 'de',
  deu: 'de',
  hin: 'hi',
  jpn: 'ja',
  jap: 'ja',
  kor: 'ko',
  por: 'pt',
  ita: 'it',
  dut: 'nl',
  nld: 'nl',
  pol: 'pl',
  rus: 'ru',
  swe: 'sv',
  dan: 'da',
  ind: 'id',
  may: 'ms',
  msa: 'ms',
  tur: 'tr',
  chi: 'zh',
  zho: 'zh',
  ell: 'el',
  gre: 'el',
  fin: 'fi',
  ukr: 'uk',
  bul: 'bg',
  ces: 'cs',
  cze: 'cs',
  ron: 'ro',
  rum: 'ro',
  slk: 'sk',
  slo: 'sk',
  nor: 'no',
  nb: 'no',
  nob: 'no',
  vie: 'vi',
  tha: 'th',
  hun: 'hu',
  cat: 'ca',
  est: 'et',
  lav: 'lv',
  lit: 'lt',
  ara: 'ar',
  heb: 'he',
  tam: 'ta',
};

const MULTILINGUAL = new Set(['babel', 'fluent', 'auto']);

const BY_LOWER = new Map<string, LanguageCode>(LANGUAGES.map((code) => [code.toLowerCase(), code]));

/**
 * A language code as clients send it, in the seed's form: matched case-insensitively and with
 * `_` for `-` (`EN_us` -> `en-US`), legacy aliases (`ENG` -> `en`), and a region the seed does not
 * list falling back to its language (`es-MX` -> `es`). Undefined when nothing fits: the schema
 * then reports the value.
 */
export function normalizeLanguage(value: string): LanguageCode | undefined {
  const key = value.trim().toLowerCase().replaceAll('_', '-');
  // The hosted API's multilingual modes (its default is `babel-en`): `babel-<code>` starts in
  // <code> and switches as the caller does, `babel`, `fluent` and `auto` detect the language.
  // A call here speaks one language: the one named, else English.
  if (key.startsWith('babel-')) return normalizeLanguage(key.slice('babel-'.length));
  if (MULTILINGUAL.has(key)) return 'en';
  const exact = BY_LOWER.get(key) ?? LEGACY[key];
  if (exact) return exact;
  const base = key.split('-')[0]!;
  return key.includes('-') ? (BY_LOWER.get(base) ?? LEGACY[base]) : undefined;
}
