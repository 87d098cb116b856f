// Local TCP ports for the servers replyflow and its tests start (dev server, PostgreSQL, metrics).
import net from 'node:net';

/** A port the OS has just handed out on 127.0.0.1 (free now; the caller binds it next). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/**
 * Listens on `host:port` (HOST: loopback unless a deployment opens it). An address in use or not on
 * this machine fails with a message that names the setting to change.
 */
export async function listenOn(
  server: Pick<net.Server, 'listen' | 'once' | 'off'>,
  host: string,
  port: number,
  what = { port: 'PORT', role: 'receiver' },
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'EADDRINUSE'
            ? `${what.port} ${port} is already in use on ${host}: stop what holds it or set ${what.port} to another port`
            : err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND'
              ? `HOST ${host} is not an address of this machine`
              : `${what.role} could not listen on ${host}:${port}: ${err.message}`,
        ),
      );
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
}

/** How this machine reaches a server listening on `address`: loopback for a wildcard address. */
export function reachableHost(address: net.AddressInfo): string {
  return reachableHostOf(address.address);
}

/** reachableHost for a HOST setting (an address or a name) before anything listens on it. */
export function reachableHostOf(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return net.isIPv6(host) ? `[${host}]` : host;
}

/** `host:port` as really bound, IPv6 in brackets. */
export function boundAddress(address: net.AddressInfo): string {
  return `${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}
