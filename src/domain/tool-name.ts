/** Built-in action names a custom tool may not take (compared case-insensitively). */
export const BUILT_IN_TOOLS = ['Speak', 'Wait', 'Transfer', 'Finish'] as const;

/** Words that must not appear in a custom tool's name (seed 2.5). */
export const RESERVED_TOOL_WORDS = [
  'input',
  'speak',
  'transfer',
  'switch',
  'wait',
  'finish',
  'press',
  'button',
  'say',
  'pause',
  'record',
  'play',
  'dial',
  'hang',
] as const;

/** Splits `BookAppointment`, `book_appointment` and `book appointment` into lower-case words. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

/** Null when the name is allowed, else why not. Reserved words are matched as whole words. */
export function toolNameProblem(name: string): string | null {
  if (name.trim() === '') return 'must not be empty';
  const builtIn = BUILT_IN_TOOLS.find((b) => b.toLowerCase() === name.trim().toLowerCase());
  if (builtIn) return `must not be the built-in tool name "${builtIn}"`;
  const reserved = nameWords(name).filter((w) => (RESERVED_TOOL_WORDS as readonly string[]).includes(w));
  if (reserved.length > 0)
    return `must not contain the reserved word${reserved.length > 1 ? 's' : ''} ${reserved.map((w) => `"${w}"`).join(', ')}`;
  return null;
}
