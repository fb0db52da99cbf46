import { createContext, useContext, useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api, problemText, session, whenSignedOut } from './api';
import { useTitle } from './components/ui';

interface Auth {
  signOut(): void;
}

const AuthContext = createContext<Auth>({ signOut: () => {} });
export const useAuth = (): Auth => useContext(AuthContext);

/** The questions of pages holding unsaved work: signing out asks first, as leaving such a page does. */
const unsavedWork = new Set<{ question: string }>();

/** While `unsaved`, signing out asks the user `question` before it drops the page's work. */
export function useUnsavedWork(unsaved: boolean, question: string): void {
  useEffect(() => {
    if (!unsaved) return;
    const entry = { question };
    unsavedWork.add(entry);
    return () => void unsavedWork.delete(entry);
  }, [unsaved, question]);
}

/**
 * Shows the sign-in form until the user gives a key the server accepts, then the page the URL
 * asked for (a deep link opened while signed out lands where it pointed).
 */
export function AuthGate({ children }: { children: ReactNode }) {
  const [signedIn, setSignedIn] = useState(() => session.key() !== null);
  // Why the sign-in form is back when the user did not sign out: the server refused the key.
  const [refused, setRefused] = useState(false);
  const queries = useQueryClient();
  useEffect(
    () =>
      whenSignedOut(() => {
        queries.clear();
        setRefused(true);
        setSignedIn(false);
      }),
    [queries],
  );
  const signOut = () => {
    for (const { question } of unsavedWork) if (!window.confirm(question)) return;
    session.signOut();
    queries.clear();
    setRefused(false);
    setSignedIn(false);
  };
  if (!signedIn)
    return (
      <SignIn
        notice={refused ? 'Your API key was not accepted; sign in again.' : null}
        onSignedIn={() => {
          setRefused(false);
          setSignedIn(true);
        }}
      />
    );
  return <AuthContext.Provider value={{ signOut }}>{children}</AuthContext.Provider>;
}

function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn(): void }) {
  const [key, setKey] = useState('');
  const [problem, setProblem] = useState<string | null>(notice);
  const [busy, setBusy] = useState(false);
  useTitle('Sign in');
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) {
      setProblem('Enter an API key.');
      return;
    }
    setBusy(true);
    setProblem(null);
    try {
      await api('/v1/me', { key: trimmed });
      session.signIn(trimmed);
      onSignedIn();
    } catch (error) {
      setProblem(
        (error as { status?: number }).status === 401
          ? 'That API key was not accepted.'
          : `Could not sign in: ${problemText(error).join('; ')}`,
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="sign-in">
      <form onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Openline</h1>
        <p>Sign in with an API key of your account. It is kept in this browser tab only.</p>
        <label htmlFor="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={key}
          onChange={(e) => setKey(e.target.value)}
          aria-describedby={problem ? 'sign-in-problem' : undefined}
          autoFocus
        />
        {problem && (
          <p id="sign-in-problem" role="alert" className="problem">
            {problem}
          </p>
        )}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <p className="hint">
          No key yet? <code>npx openline accounts create</code> prints one; the server prints the first one when it
          starts.
        </p>
      </form>
    </main>
  );
}
