import { NavLink, Outlet } from 'react-router';
import { useAuth } from './auth';

const PAGES: [string, string][] = [
  ['/calls', 'Calls'],
  ['/agents', 'Agents'],
  ['/tools', 'Tools'],
  ['/knowledge', 'Knowledge'],
  ['/numbers', 'Numbers'],
  ['/voices', 'Voices'],
  ['/pathways', 'Pathways'],
  ['/campaigns', 'Campaigns'],
  ['/batches', 'Batches'],
  ['/tests', 'Tests'],
  ['/sms', 'SMS'],
  ['/settings', 'Settings'],
];

export function Layout() {
  const { signOut } = useAuth();
  return (
    <div className="shell">
      <a className="skip" href="#content">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Openline</span>
        <nav aria-label="Main">
          {PAGES.map(([to, label]) => (
            <NavLink key={to} to={to}>
              {label}
            </NavLink>
          ))}
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
