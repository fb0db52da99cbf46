/** A SIP trunk: where calls go, and the credentials its digest challenges want. */
export interface SipTrunk {
  host: string;
  port: number;
  transport: 'udp';
  username?: string;
  password?: string;
}

/**
 * Reads OPENLINE_SIP_TRUNK: `sip:[user[:password]@]host[:port][;transport=udp]`. Returns the trunk
 * or a sentence saying what is wrong with the value.
 */
export function parseTrunk(value: string): SipTrunk | string {
  const match = /^sips?:(?:([^:@]*)(?::([^@]*))?@)?([^;:?]+|\[[^\]]+\])(?::(\d+))?((?:;[^;=]+(?:=[^;]*)?)*)$/i.exec(
    value.trim(),
  );
  if (!match) return 'must be a SIP URI such as sip:user:password@sip.example.com:5060;transport=udp';
  const params = Object.fromEntries(
    (match[5] ?? '')
      .split(';')
      .slice(1)
      .map((p) => p.split('=').map((x) => x.toLowerCase())),
  ) as Record<string, string | undefined>;
  const transport = params.transport ?? 'udp';
  if (transport !== 'udp') return `transport=${transport} is not supported yet: use transport=udp`;
  const port = match[4] ? Number(match[4]) : 5060;
  if (port < 1 || port > 65535) return 'has a port out of range';
  return {
    host: match[3]!.replace(/^\[|\]$/g, ''),
    port,
    transport: 'udp',
    ...(match[1] && { username: decodeURIComponent(match[1]) }),
    ...(match[2] !== undefined && { password: decodeURIComponent(match[2]) }),
  };
}
