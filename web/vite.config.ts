import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The dashboard: built into web/dist, which the server serves at / (src/web.ts). `npm run dev:web`
// runs Vite with the API proxied to a server on port 8080.
const api = { target: 'http://127.0.0.1:8080', changeOrigin: false };

export default defineConfig({
  root: import.meta.dirname,
  base: '/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 1000 },
  server: { proxy: { '/v1': api, '/api': api, '/openapi.json': api, '/docs': api } },
});
