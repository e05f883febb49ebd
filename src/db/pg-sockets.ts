// The sockets of the engine's postgres.js connections: which host of a multi-host URL each connection tries, and how a
// connection attempt ends while no host is a primary. postgres.js, given a `socket` function, no longer picks hosts
// itself; and on a multi-host URL it tries host after host, with no pause and no end, for as long as none of them is
// a primary: a query waiting for a connection would wait until a primary came back (a hang), and the attempts would
// spin. Here, once every host has failed in a row, the next attempt gets a socket that never answers, so that
// postgres.js's `connect_timeout` ends it (CONNECT_TIMEOUT, rejecting the query waiting for that connection) before
// the hosts are tried again. (Answering it at once with a server's FATAL error instead would be quicker, but
// postgres.js 3.4 mishandles a startup error on a connection that lost a query in flight: it then skips its
// target_session_attrs check on the next host, and could settle on a standby.)
import net from 'node:net';
import { Duplex } from 'node:stream';

/** A connection still open this long after it connected is one to a usable server (a refused host, or a standby dropped by `target_session_attrs`, is gone within milliseconds). */
const USABLE_AFTER_MS = 1_000;

/** What postgres.js hands the socket function: the URL's hosts and ports, or a Unix socket's path. */
interface SocketTarget {
  host: string[];
  port: number[];
  path?: string | false;
}

/**
 * The socket function of one engine's pools (pool, lock session, and postgres.js's LISTEN connection, which inherits
 * it), with what its attempts tell about the hosts. Nagle's algorithm is off: postgres.js connects plain sockets,
 * which hold a small write (a transaction's COMMIT, a COPY's end) until the server acknowledges the previous one, and
 * the server delays that acknowledgement: a two-statement transaction took 1.5 ms instead of 0.6, a COPY 50-90 ms.
 */
export class HostSockets {
  /** The host new attempts go to: the last one that worked, moved on by each failure. */
  private preferred = 0;
  /** Attempts that failed one after the other, whichever connection made them. */
  private failedInRow = 0;
  private usable = true;

  /** False once every host has failed in a row, until a connection stays open on one: no primary is reachable now. */
  get reachable(): boolean {
    return this.usable;
  }

  /** The function given to postgres.js as its `socket` option. */
  readonly connect = ({ host, port, path }: SocketTarget): net.Socket => {
    if (path) return net.connect({ path });
    const hosts = host.length;
    if (hosts > 1 && this.failedInRow >= hosts) {
      // Every host failed: this attempt fails the query waiting for it (at connect_timeout); the next starts a new round.
      this.failedInRow = 0;
      return neverAnswering(host.map((h, i) => `${h}:${port[i] ?? port[0]!}`).join(','));
    }
    const i = this.preferred % hosts;
    const socket = net.connect({ host: host[i], port: port[i] ?? port[0]!, noDelay: true });
    this.watch(socket, i, hosts);
    return socket;
  };

  /** Counts the attempt on host `i` as failed if its socket closes before it has been open USABLE_AFTER_MS. */
  private watch(socket: net.Socket, i: number, hosts: number): void {
    let usable = false;
    let timer: NodeJS.Timeout | undefined;
    socket.once('connect', () => {
      timer = setTimeout(() => {
        usable = true;
        this.failedInRow = 0;
        this.usable = true;
      }, USABLE_AFTER_MS).unref();
    });
    socket.once('close', () => {
      clearTimeout(timer);
      if (usable) return; // an idle or ended connection, not a failed attempt
      this.failedInRow++;
      if (this.preferred % hosts === i) this.preferred = (i + 1) % hosts;
      if (this.failedInRow >= hosts) this.usable = false;
    });
  }
}

/**
 * A socket that takes writes and never answers: postgres.js waits for the server's first reply until its
 * connect_timeout, then rejects the query waiting for this connection with CONNECT_TIMEOUT and destroys the socket.
 */
function neverAnswering(hosts: string): net.Socket {
  const socket = new Duplex({
    read() {},
    write(_chunk, _encoding, done) {
      done();
    },
  });
  // Named in postgres.js's error message ("write CONNECT_TIMEOUT host:port").
  return Object.assign(socket, { host: hosts, port: 'none read-write' }) as unknown as net.Socket;
}
