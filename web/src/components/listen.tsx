import { useEffect, useRef, useState } from 'react';
import { api, problemText } from '../api';

/** Seconds of audio queued ahead of the play-out point: smooths the network's jitter. */
const LEAD_S = 0.15;

/**
 * Live listening on the call page: POST /v1/calls/{id}/listen gives a websocket of the call's
 * audio (both sides mixed, 16 kHz 16-bit mono), played here as it comes.
 */
export function ListenButton({ callId }: { callId: string }) {
  const [state, setState] = useState<'idle' | 'connecting' | 'listening'>('idle');
  const [heardS, setHeardS] = useState(0);
  const [problem, setProblem] = useState<string | null>(null);
  const session = useRef<{ socket: WebSocket; context: AudioContext } | null>(null);

  const stop = () => {
    session.current?.socket.close();
    void session.current?.context.close();
    session.current = null;
    setState('idle');
  };
  useEffect(() => stop, []);

  async function start() {
    setProblem(null);
    setState('connecting');
    try {
      const { data } = await api<{ data: { url: string } }>(`/v1/calls/${callId}/listen`, { method: 'POST' });
      const context = new AudioContext({ sampleRate: 16_000 });
      const socket = new WebSocket(data.url);
      socket.binaryType = 'arraybuffer';
      session.current = { socket, context };
      let next = 0;
      let samples = 0;
      socket.onopen = () => setState('listening');
      socket.onmessage = (event: MessageEvent<ArrayBuffer>) => {
        const pcm = new Int16Array(event.data);
        const buffer = context.createBuffer(1, pcm.length, 16_000);
        const channel = buffer.getChannelData(0);
        for (let i = 0; i < pcm.length; i++) channel[i] = pcm[i]! / 32768;
        const source = context.createBufferSource();
        source.buffer = buffer;
        source.connect(context.destination);
        next = Math.max(next, context.currentTime + LEAD_S);
        source.start(next);
        next += buffer.duration;
        samples += pcm.length;
        setHeardS(Math.floor(samples / 16_000));
      };
      socket.onclose = () => {
        if (session.current?.socket === socket) stop();
      };
    } catch (error) {
      setProblem(problemText(error).join(' '));
      setState('idle');
    }
  }

  return (
    <>
      {state === 'idle' ? (
        <button type="button" className="secondary" onClick={() => void start()}>
          Listen live
        </button>
      ) : (
        <>
          {/* A steady name (the time heard beside it, not in it): "Stop listening", apart from Stop call. */}
          <button type="button" className="secondary" onClick={stop}>
            {state === 'connecting' ? 'Connecting…' : 'Stop listening'}
          </button>
          {state !== 'connecting' && <span className="muted"> Listening · {heardS} s</span>}
        </>
      )}
      {problem && (
        <p role="alert" className="problem">
          {problem}
        </p>
      )}
    </>
  );
}
