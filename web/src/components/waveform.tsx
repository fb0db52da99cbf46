import { useEffect, useRef, useState } from 'react';

/**
 * A recording player: the browser's own audio controls and, above them, the waveform of each
 * track (channel) drawn from the decoded audio, with the playing position. Clicking a track seeks.
 */
export function Recording({ src }: { src: string }) {
  const audio = useRef<HTMLAudioElement>(null);
  const [tracks, setTracks] = useState<Float32Array[] | null>(null);
  const [position, setPosition] = useState(0);
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    let cancelled = false;
    const context = new AudioContext();
    (async () => {
      const bytes = await (await fetch(src)).arrayBuffer();
      const decoded = await context.decodeAudioData(bytes);
      if (cancelled) return;
      setTracks(Array.from({ length: decoded.numberOfChannels }, (_, i) => peaks(decoded.getChannelData(i), 600)));
    })().catch((error: Error) => !cancelled && setProblem(error.message));
    return () => {
      cancelled = true;
      void context.close();
    };
  }, [src]);

  const names = tracks && tracks.length === 2 ? ['Other party', 'Agent'] : undefined;
  return (
    <div className="recording">
      {problem && <p className="muted">The waveform could not be drawn: {problem}</p>}
      {tracks?.map((track, i) => (
        <Track
          key={i}
          label={names?.[i] ?? (tracks.length > 1 ? `Track ${i + 1}` : 'Call audio')}
          peaks={track}
          position={position}
          onSeek={(fraction) => {
            const element = audio.current;
            if (element && Number.isFinite(element.duration)) element.currentTime = fraction * element.duration;
          }}
        />
      ))}
      <audio
        ref={audio}
        controls
        src={src}
        aria-label="Call recording"
        onTimeUpdate={(e) => {
          const element = e.currentTarget;
          setPosition(element.duration ? element.currentTime / element.duration : 0);
        }}
      />
    </div>
  );
}

/** The loudest sample of each of `buckets` stretches of the track. */
function peaks(samples: Float32Array, buckets: number): Float32Array {
  const out = new Float32Array(buckets);
  const size = Math.max(1, Math.floor(samples.length / buckets));
  for (let b = 0; b < buckets; b++) {
    let max = 0;
    for (let i = b * size; i < Math.min(samples.length, (b + 1) * size); i++)
      max = Math.max(max, Math.abs(samples[i]!));
    out[b] = max;
  }
  return out;
}

function Track({
  label,
  peaks: values,
  position,
  onSeek,
}: {
  label: string;
  peaks: Float32Array;
  position: number;
  onSeek(fraction: number): void;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const element = canvas.current;
    const ctx = element?.getContext('2d');
    if (!element || !ctx) return;
    const { width, height } = element;
    ctx.clearRect(0, 0, width, height);
    const step = width / values.length;
    values.forEach((value, i) => {
      const bar = Math.max(1, value * height);
      ctx.fillStyle = i / values.length <= position ? '#1d4ed8' : '#94a3b8';
      ctx.fillRect(i * step, (height - bar) / 2, Math.max(1, step - 0.5), bar);
    });
  }, [values, position]);
  return (
    <div className="track">
      <span>{label}</span>
      <canvas
        ref={canvas}
        width={900}
        height={56}
        role="img"
        aria-label={`Waveform of the ${label.toLowerCase()} track`}
        onClick={(e) => {
          const box = e.currentTarget.getBoundingClientRect();
          onSeek((e.clientX - box.left) / box.width);
        }}
      />
    </div>
  );
}
