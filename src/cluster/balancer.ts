// The cluster's public frontend address: a TCP balancer that hands each new connection to the next
// node whose frontend accepts it. Clients hold one address (TEMPORAL_ADDRESS) and gRPC keeps a
// connection open, so when a node dies its connections break, the clients reconnect, and the balancer
// gives them a live node. A deployment puts its own load balancer (or DNS over the nodes) here.
import net from 'node:net';

export interface Balancer {
  address: string;
  port: number;
  stop(): Promise<void>;
}

export async function startBalancer(options: {
  port: number;
  /** Each node's frontend `host:port`, asked in turn. */
  upstreams: string[];
}): Promise<Balancer> {
  const sockets = new Set<net.Socket>();
  let next = 0;

  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };

  /** Tries each upstream once, starting with the next in turn; resolves undefined when none accepts. */
  const connectUpstream = async (): Promise<net.Socket | undefined> => {
    const start = next++;
    for (let i = 0; i < options.upstreams.length; i++) {
      const [host, port] = options.upstreams[(start + i) % options.upstreams.length]!.split(':');
      const upstream = await new Promise<net.Socket | undefined>((resolve) => {
        const socket = net.connect({ host, port: Number(port) });
        socket.once('connect', () => resolve(socket));
        socket.once('error', () => resolve(undefined));
      });
      if (upstream) return upstream;
    }
    return undefined;
  };

  const server = net.createServer((client) => {
    track(client);
    client.pause();
    client.on('error', () => client.destroy());
    void connectUpstream().then((upstream) => {
      if (!upstream || client.destroyed) {
        upstream?.destroy();
        client.destroy();
        return;
      }
      track(upstream);
      upstream.on('error', () => upstream.destroy());
      upstream.once('close', () => client.destroy());
      client.once('close', () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    port,
    stop: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
