import dns from 'node:dns';
import net from 'node:net';

/**
 * The address lookup of SIP's and RTP's UDP sockets (dgram's `lookup`), called for every datagram
 * sent: an IP address (what SDP, Via and latching give) is taken as it is, at once, where
 * dns.lookup would answer it on the next tick (a closure and a tick per packet, fifty a second a
 * call); a name still goes to dns.lookup. A socket of IPv6 and IPv4 alike (bound to `::`) asks for
 * family 6: an IPv4 address goes to it IPv4-mapped (`::ffff:192.0.2.1`), which it can send to,
 * where the address as it is fails with EINVAL.
 */
export function udpLookup(
  address: string,
  options: dns.LookupOneOptions | number,
  callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void,
): void {
  const family = net.isIP(address);
  const wanted = typeof options === 'number' ? options : options.family;
  if (family === 4 && (wanted === 6 || wanted === 'IPv6')) callback(null, `::ffff:${address}`, 6);
  else if (family !== 0) callback(null, address, family);
  else dns.lookup(address, typeof options === 'number' ? { family: options } : options, callback);
}
