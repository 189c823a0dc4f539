/** Free TCP ports on 127.0.0.1 for servers the tests start. */
import { readFileSync } from 'node:fs';
import net from 'node:net';

/** Ports below this are left alone (well-known and registered services a machine may run). */
const LOWEST_PORT = 10_000;
/** Linux's default ephemeral range starts here; used where /proc does not say. */
const DEFAULT_EPHEMERAL_LOW = 32_768;
/** Random candidates tried before giving up: a busy machine has few servers in the range. */
const MAX_ATTEMPTS = 200;

/**
 * Where the kernel's ephemeral range starts. Ports handed out there by `listen(0)` are also what
 * every outgoing connection's local end is drawn from, so a port found free there can be taken by
 * a client socket (a test's own TigerBeetle, MySQL or Kafka client) in the seconds before a slow
 * server (a JVM, a replica after its format) binds it: CI once saw a Kafka broker die of
 * "Address already in use" that way. Ports below the range are only ever taken by servers.
 */
function ephemeralLow(): number {
  try {
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    return Number.isInteger(low) && low > LOWEST_PORT + 1_000 ? low : DEFAULT_EPHEMERAL_LOW;
  } catch {
    return DEFAULT_EPHEMERAL_LOW;
  }
}

function tryListen(port: number): Promise<net.Server | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/**
 * Distinct ports, each bound once to prove it free, drawn at random from below the ephemeral range
 * (random, so two test processes starting at once rarely draw alike). All are held until the last
 * is found, so the ports are distinct; another server could still take one in the moment between
 * their release and the caller's server binding it, and that server then fails and says so.
 */
export async function freePorts(count: number): Promise<number[]> {
  const high = ephemeralLow() - 1;
  const held: net.Server[] = [];
  try {
    for (let attempt = 0; held.length < count; attempt++) {
      if (attempt >= MAX_ATTEMPTS)
        throw new Error(
          `no ${count} free ports in ${LOWEST_PORT}–${high} after ${MAX_ATTEMPTS} tries`,
        );
      const port = LOWEST_PORT + Math.floor(Math.random() * (high - LOWEST_PORT + 1));
      if (held.some((server) => (server.address() as net.AddressInfo).port === port)) continue;
      const server = await tryListen(port);
      if (server !== undefined) held.push(server);
    }
    return held.map((server) => (server.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(
      held.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
    );
  }
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}
