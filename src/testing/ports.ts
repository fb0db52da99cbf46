import dgram from 'node:dgram';

/** A UDP port free on loopback right now (bound, then released): for SIP peers in tests and benchmarks. */
export async function freeUdpPort(): Promise<number> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}
