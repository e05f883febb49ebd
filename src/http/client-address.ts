// Who a request comes from, for the sign-in limit and the logs. Behind a reverse proxy every request comes from the
// proxy's address: the client's is the one the proxy appended to X-Forwarded-For. That header is believed only from
// the proxies named in TRUSTED_PROXIES; anyone else could write any address into it.
import { isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';

/** An address as compared: IPv4 written inside IPv6 (`::ffff:10.0.0.5`, how a dual-stack socket reports it) as IPv4. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/**
 * Returns how a request's client address is read: the socket's peer, or, when the peer is one of the `trusted`
 * proxies, the last address in X-Forwarded-For that is not itself a trusted proxy (each proxy appends the address it
 * was reached from, so the addresses left of that one are the client's own say and are not believed).
 */
export function clientAddressOf(trusted: readonly string[]): (req: IncomingMessage) => string {
  const proxies = new Set(trusted.map(plain));
  return (req) => {
    const peer = req.socket.remoteAddress ?? 'unknown';
    if (!proxies.has(plain(peer))) return peer;
    const header = req.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((hop) => plain(hop.trim()));
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      if (isIP(hop) !== 0 && !proxies.has(hop)) return hop;
      if (!proxies.has(hop)) break; // not an address: nothing left of it is believed either
    }
    return peer;
  };
}
