import { useEffect, useRef, useState } from 'react';
import { Link } from 'react-router';
import { session } from '../api';
import { startWebCall, type WebCall } from '../../client/openline';
import { ROLE_NAMES } from '../pages/call';

/** Whom "Talk to this ..." calls: an agent, an inbound number or a pathway of the account. */
export type TalkTarget = { agentId: string } | { phoneNumber: string } | { pathwayId: string; pathwayVersion?: number };

interface Line {
  role: string;
  text: string;
}

/**
 * A web call from the dashboard (docs/web-calls.md): the browser's microphone talks to the target
 * over WebRTC with the signed-in key; the transcript shows as it is written.
 */
export function WebCallPanel({ target, title, onClose }: { target: TalkTarget; title: string; onClose(): void }) {
  const [state, setState] = useState<'connecting' | 'active' | 'ended'>('connecting');
  const [lines, setLines] = useState<Line[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  const [talking, setTalking] = useState(false);
  const [muted, setMuted] = useState(false);
  const [callId, setCallId] = useState<string | null>(null);
  const call = useRef<WebCall | null>(null);
  const panel = useRef<HTMLElement>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const close = useRef<HTMLButtonElement>(null);

  // The panel opens above the list whose button opened it: the focus moves to it, so that Tab
  // reaches Mute and Hang up; when the call ends, to Close (in the place of the buttons gone).
  useEffect(() => heading.current?.focus(), []);
  useEffect(() => {
    const focus = document.activeElement;
    if (state === 'ended' && (!focus || focus === document.body || panel.current?.contains(focus)))
      close.current?.focus();
  }, [state]);

  useEffect(() => {
    let cancelled = false;
    startWebCall({ apiKey: session.key() ?? '', server: location.origin, ...target }).then(
      (started) => {
        if (cancelled) return started.stop();
        call.current = started;
        setCallId(started.callId);
        setState('active');
        started.on('transcript', (line) => setLines((all) => [...all, line]));
        started.on('notice', ({ message }) => setProblem(message));
        started.on('agent_start_talking', () => setTalking(true));
        started.on('agent_stop_talking', () => setTalking(false));
        started.on('ended', ({ reason, message }) => {
          if (reason === 'network') setProblem(message);
          setState('ended');
        });
      },
      (error: unknown) => {
        if (cancelled) return;
        setProblem(error instanceof Error ? error.message : String(error));
        setState('ended');
      },
    );
    return () => {
      cancelled = true;
      call.current?.stop();
    };
    // One call per panel: the target does not change while it is open.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  return (
    <section className="panel web-call" aria-label="Web call" ref={panel}>
      <div className="page-head">
        <h2 tabIndex={-1} ref={heading}>
          Talking to {title}
        </h2>
        <span className="status">
          {state === 'connecting'
            ? 'Connecting…'
            : state === 'ended'
              ? 'Call ended'
              : talking
                ? 'Agent speaking'
                : 'Listening'}
        </span>
      </div>
      {problem && (
        <p role="alert" className="problem">
          {problem}
        </p>
      )}
      <ol className="timeline" aria-label="Transcript">
        {lines.map((line, i) => (
          <li key={i} className={`line line-${line.role}`}>
            <span className="who">{line.role === 'user' ? 'You' : (ROLE_NAMES[line.role] ?? line.role)}</span>
            <span className="said">{line.text}</span>
          </li>
        ))}
      </ol>
      <div className="actions">
        {state === 'active' && (
          <>
            <button
              type="button"
              className="secondary"
              aria-pressed={muted}
              onClick={() => {
                call.current?.mute(!muted);
                setMuted(!muted);
              }}
            >
              {muted ? 'Unmute' : 'Mute'}
            </button>
            <button type="button" className="danger" onClick={() => call.current?.stop()}>
              Hang up
            </button>
          </>
        )}
        {state === 'ended' && (
          <button type="button" className="secondary" onClick={onClose} ref={close}>
            Close
          </button>
        )}
        {callId && <Link to={`/calls/${callId}`}>Call details</Link>}
      </div>
    </section>
  );
}
