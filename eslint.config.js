import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import reactHooks from 'eslint-plugin-react-hooks';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'dist/', 'web/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  // Layers (docs/architecture.md): the domain is pure rules that import no other layer; media
  // (frames, VAD, speech) knows nothing of calls; providers (LLM, STT, TTS) know no carrier.
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['../*'], message: 'src/domain imports only domain modules and packages.' }] },
      ],
    },
  },
  {
    files: ['src/media/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../calls/*', '../api/*', '../store/*'],
              message: 'src/media knows nothing of calls, the API or the store.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/amd/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../calls/*', '../api/*', '../store/*'],
              message:
                'src/amd decides answered_by from audio and words: it knows nothing of calls, the API or the store.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/providers/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/carriers/*', '**/calls/*', '**/api/*', '**/store/*'],
              message: 'src/providers are vendor adapters: no carriers, calls, API or store.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/mcp/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../*', '!../domain'],
              message: 'src/mcp acts through the REST API only (its ApiRequest): no calls, store or carriers.',
            },
          ],
        },
      ],
    },
  },
  // The dashboard: the rules of hooks.
  {
    files: ['web/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'warn',
    },
  },
);
