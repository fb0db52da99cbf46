import { useEffect, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, blobUrl } from '../api';
import { Loading, Problem, useTitle } from '../components/ui';

interface Voice {
  id: string;
  name: string;
  description: string;
  tags: string[];
  aliases: string[];
}

/** Voices: the catalogue, each with a sample spoken by the configured speech provider. */
export function VoicesPage() {
  useTitle('Voices');
  const voices = useQuery({ queryKey: ['voices'], queryFn: () => api<{ voices: Voice[] }>('/v1/voices') });
  const [playing, setPlaying] = useState<{ name: string; url: string } | null>(null);
  const [problem, setProblem] = useState<unknown>(null);
  const [busy, setBusy] = useState<string | null>(null);
  useEffect(() => () => void (playing && URL.revokeObjectURL(playing.url)), [playing]);

  const play = async (voice: Voice) => {
    setBusy(voice.name);
    setProblem(null);
    try {
      const url = await blobUrl(`/v1/voices/${encodeURIComponent(voice.id)}/sample`, {
        method: 'POST',
        body: { text: `Hi, this is ${voice.name}. How can I help you today?` },
      });
      setPlaying({ name: voice.name, url });
    } catch (error) {
      setProblem(error);
    } finally {
      setBusy(null);
    }
  };

  return (
    <section>
      <h1>Voices</h1>
      <Problem error={voices.error ?? problem} />
      {playing && (
        <p>
          Sample of {playing.name}:{' '}
          <audio controls autoPlay src={playing.url} aria-label={`Sample of ${playing.name}`} />
        </p>
      )}
      {voices.isPending ? (
        <Loading what="voices" />
      ) : (
        <table className="list">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Description</th>
              <th scope="col">Tags</th>
              <th scope="col">
                <span className="sr-only">Sample</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {voices.data?.voices.map((v) => (
              <tr key={v.id}>
                <td>{v.name}</td>
                <td>{v.description}</td>
                <td>{v.tags.join(', ')}</td>
                <td>
                  <button
                    type="button"
                    className="secondary"
                    onClick={() => void play(v)}
                    disabled={busy !== null}
                    aria-label={`Play a sample of ${v.name}`}
                  >
                    {busy === v.name ? 'Speaking…' : 'Play sample'}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
