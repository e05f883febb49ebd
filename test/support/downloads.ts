// A test client for file downloads read at the test's pace: the response stays paused between reads, so the server
// meets back-pressure (the socket's buffers fill and its writes wait) while the test does other things.
import { request, type IncomingHttpHeaders } from 'node:http';

export interface Download {
  status: number;
  headers: IncomingHttpHeaders;
  /** The next piece of the body as it arrived, or undefined once the body has ended. */
  next(): Promise<Buffer | undefined>;
  /** Every byte still to come, until the server ends the body. */
  rest(): Promise<Buffer>;
  /** Closes the connection from the client's side, as a browser tab being closed. */
  abort(): void;
}

/** Sends GET `path` and returns once the response headers have arrived; nothing of the body is read until asked. */
export function openDownload(url: string, path: string, token?: string): Promise<Download> {
  return new Promise((resolve, reject) => {
    const req = request(url + path, { headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      const pieces = res[Symbol.asyncIterator]();
      const next = async () => {
        const { value, done } = await pieces.next();
        return done ? undefined : (value as Buffer);
      };
      resolve({
        status: res.statusCode!,
        headers: res.headers,
        next,
        async rest() {
          const all: Buffer[] = [];
          for (let piece = await next(); piece; piece = await next()) all.push(piece);
          return Buffer.concat(all);
        },
        abort: () => req.destroy(),
      });
    });
    req.on('error', reject);
    req.end();
  });
}
