import { defineConfig } from 'vite';

// The web call client library and widget: built into web/dist/client, which the server serves at
// /client/openline.js and /client/widget.js (src/web.ts), with fixed names so pages can link them.
export default defineConfig({
  root: import.meta.dirname,
  build: {
    outDir: '../dist/client',
    emptyOutDir: true,
    lib: {
      entry: { openline: 'openline.ts', widget: 'widget.ts' },
      formats: ['es'],
      fileName: (_format, name) => `${name}.js`,
    },
    rollupOptions: { output: { chunkFileNames: 'chunks/[name]-[hash].js' } },
  },
});
