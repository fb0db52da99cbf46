/**
 * Whether a call's own SDP offers ask for SRTP: `mandatory` offers RTP/SAVP (the far end must
 * take it, or there is no call), `optional` offers RTP/AVP with the keys (SRTP when the answer
 * has a key, plain RTP when not).
 */
export type SrtpMode = 'mandatory' | 'optional';

/** A SIP trunk: where calls go, and the credentials its digest challenges want. */
export interface SipTrunk {
  host: string;
  port: number;
  /** udp (default), tcp, or tls (also what a `sips:` URI means). */
  transport: 'udp' | 'tcp' | 'tls';
  username?: string;
  password?: string;
  /** `;register=true`: Openline registers with the trunk (REGISTER), which then sends calls to it. */
  register?: boolean;
  /** `;srtp=mandatory|optional`: our calls' offers ask for SRTP (SDES keys). Default: plain RTP. */
  srtp?: SrtpMode;
}

const TRANSPORTS = ['udp', 'tcp', 'tls'] as const;

/**
 * Reads OPENLINE_SIP_TRUNK:
 * `sip:[user[:password]@]host[:port][;transport=udp|tcp|tls][;register=true][;srtp=mandatory|optional]`
 * (`sips:` means TLS). Returns the trunk or a sentence saying what is wrong with the value.
 */
export function parseTrunk(value: string): SipTrunk | string {
  const match = /^(sips?):(?:([^:@]*)(?::([^@]*))?@)?([^;:?]+|\[[^\]]+\])(?::(\d+))?((?:;[^;=]+(?:=[^;]*)?)*)$/i.exec(
    value.trim(),
  );
  if (!match) return 'must be a SIP URI such as sip:user:password@sip.example.com:5060;transport=udp';
  const params = Object.fromEntries(
    (match[6] ?? '')
      .split(';')
      .slice(1)
      .map((p) => p.split('=').map((x) => x.toLowerCase())),
  ) as Record<string, string | undefined>;
  const secure = match[1]!.toLowerCase() === 'sips';
  const transport = params.transport ?? (secure ? 'tls' : 'udp');
  if (!(TRANSPORTS as readonly string[]).includes(transport))
    return `transport=${transport} is not supported: use transport=udp, tcp or tls`;
  if (secure && transport !== 'tls') return 'a sips: URI goes over TLS: use transport=tls or a sip: URI';
  if (params.register !== undefined && params.register !== 'true' && params.register !== 'false')
    return `register=${params.register} must be true or false`;
  const register = params.register === 'true';
  if (register && !match[2]) return 'register=true needs the user to register as (sip:user:password@host)';
  const srtp = params.srtp;
  if (srtp !== undefined && srtp !== 'mandatory' && srtp !== 'optional')
    return `srtp=${srtp} must be mandatory or optional`;
  const port = match[5] ? Number(match[5]) : transport === 'tls' ? 5061 : 5060;
  if (port < 1 || port > 65535) return 'has a port out of range';
  return {
    host: match[4]!.replace(/^\[|\]$/g, ''),
    port,
    transport: transport as SipTrunk['transport'],
    ...(match[2] && { username: decodeURIComponent(match[2]) }),
    ...(match[3] !== undefined && { password: decodeURIComponent(match[3]) }),
    ...(register && { register: true }),
    ...(srtp && { srtp }),
  };
}
