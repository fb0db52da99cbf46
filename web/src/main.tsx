import { StrictMode, Suspense, lazy } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import {
  Navigate,
  Route,
  RouterProvider,
  createBrowserRouter,
  createRoutesFromElements,
  useRouteError,
} from 'react-router';
import { AuthGate } from './auth';
import { Layout } from './layout';
import { useTitle } from './components/ui';
import { CallsPage } from './pages/calls';
import { CallPage } from './pages/call';
import { NewCallPage } from './pages/new-call';
import { AgentsPage, PersonasPage, SecretsPage, ToolsPage } from './pages/resources';
import { KnowledgePage } from './pages/knowledge';
import { NumbersPage } from './pages/numbers';
import { VoicesPage } from './pages/voices';
import { CampaignsPage, CampaignPage } from './pages/campaigns';
import { BatchesPage } from './pages/batches';
import { TestsPage, TestRunPage } from './pages/tests';
import { PathwaysPage } from './pages/pathways';
import { SmsPage } from './pages/sms';
import { SettingsPage } from './pages/settings';
import './styles.css';

// The pathway editor (the canvas library and the graph checks) loads when first opened.
const PathwayPage = lazy(async () => ({ default: (await import('./pages/pathway')).PathwayPage }));

const client = new QueryClient({
  defaultOptions: {
    queries: { retry: (count, error) => count < 2 && !(error as { status?: number }).status, staleTime: 2_000 },
  },
});

function NotFound() {
  useTitle('Page not found');
  return (
    <section>
      <h1>Page not found</h1>
      <p>There is no such page in the dashboard.</p>
    </section>
  );
}

/** A module the browser could not fetch: the server's dashboard was rebuilt since this tab loaded it. */
const staleCode = (error: unknown): boolean =>
  error instanceof TypeError && /dynamically imported module|Importing a module script failed/i.test(error.message);

/** A page that failed (under the header, which still works): what happened and a way back. */
function PageError() {
  const error = useRouteError();
  useTitle('Something went wrong');
  return (
    <section>
      <h1>Something went wrong</h1>
      <p role="alert" className="problem">
        {staleCode(error)
          ? 'Openline was updated since this page was loaded: reload it to get the new dashboard.'
          : `This page failed: ${error instanceof Error ? error.message : String(error)}`}
      </p>
      <button type="button" onClick={() => location.reload()}>
        Reload
      </button>
    </section>
  );
}

// A data router: the pathway editor can hold a navigation while it has unsaved edits (useBlocker).
const router = createBrowserRouter(
  createRoutesFromElements(
    <Route
      element={
        <AuthGate>
          <Layout />
        </AuthGate>
      }
    >
      {/* A page that fails shows PageError under the header. */}
      <Route errorElement={<PageError />}>
        <Route index element={<Navigate to="/calls" replace />} />
        <Route path="calls" element={<CallsPage />} />
        <Route path="calls/new" element={<NewCallPage />} />
        <Route path="calls/:id" element={<CallPage />} />
        <Route path="agents" element={<AgentsPage />} />
        <Route path="tools" element={<ToolsPage />} />
        <Route path="knowledge" element={<KnowledgePage />} />
        <Route path="personas" element={<PersonasPage />} />
        <Route path="secrets" element={<SecretsPage />} />
        <Route path="numbers" element={<NumbersPage />} />
        <Route path="voices" element={<VoicesPage />} />
        <Route path="campaigns" element={<CampaignsPage />} />
        <Route path="campaigns/:id" element={<CampaignPage />} />
        <Route path="batches" element={<BatchesPage />} />
        <Route path="tests" element={<TestsPage />} />
        <Route path="tests/runs/:id" element={<TestRunPage />} />
        <Route path="pathways" element={<PathwaysPage />} />
        <Route
          path="pathways/:id"
          element={
            <Suspense fallback={<p aria-busy="true">Loading the editor…</p>}>
              <PathwayPage />
            </Suspense>
          }
        />
        <Route path="sms" element={<SmsPage />} />
        <Route path="settings" element={<SettingsPage />} />
        <Route path="*" element={<NotFound />} />
      </Route>
    </Route>,
  ),
);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={client}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
