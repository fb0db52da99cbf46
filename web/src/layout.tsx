import { NavLink, Outlet, useLocation } from 'react-router';
import { useAuth } from './auth';

/** What agents use besides their prompt, one page each under the top bar's Tools. */
export const TOOL_PAGES: [string, string][] = [
  ['/tools', 'Custom tools'],
  ['/knowledge', 'Knowledge bases'],
  ['/secrets', 'Secrets'],
];

const PAGES: [string, string][] = [
  ['/calls', 'Calls'],
  ['/agents', 'Agents'],
  ['/personas', 'Personas'],
  ['/tools', 'Tools'],
  ['/numbers', 'Numbers'],
  ['/voices', 'Voices'],
  ['/pathways', 'Pathways'],
  ['/campaigns', 'Campaigns'],
  ['/batches', 'Batches'],
  ['/tests', 'Tests'],
  ['/sms', 'SMS'],
  ['/settings', 'Settings'],
];

/** The links between the Tools pages, above each of them. */
export function ToolTabs() {
  return (
    <nav aria-label="Tools" className="tabs">
      {TOOL_PAGES.map(([to, label]) => (
        <NavLink key={to} to={to}>
          {label}
        </NavLink>
      ))}
    </nav>
  );
}

export function Layout() {
  const { signOut } = useAuth();
  const { pathname } = useLocation();
  const inTools = TOOL_PAGES.some(([to]) => pathname.startsWith(to));
  return (
    <div className="shell">
      <a className="skip" href="#content">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Openline</span>
        <nav aria-label="Main">
          {PAGES.map(([to, label]) => {
            // Tools stands for all its pages (ToolTabs).
            const section = to === '/tools' && inTools;
            return (
              <NavLink
                key={to}
                to={to}
                className={({ isActive }) => (isActive || section ? 'active' : undefined)}
                {...(section && { 'aria-current': 'true' as const })}
              >
                {label}
              </NavLink>
            );
          })}
        </nav>
        <a href="/docs" className="docs-link">
          API docs
        </a>
        <button type="button" className="secondary" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="content" tabIndex={-1}>
        <Outlet />
      </main>
    </div>
  );
}
