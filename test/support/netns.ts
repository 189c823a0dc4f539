/**
 * Network partitions for the fault suite: each TigerBeetle replica in a Linux network namespace
 * of its own, joined with the test process's (the service's) namespace by veth links to one
 * bridge in a namespace of the mesh's own:
 *
 *   replica i (namespace <id>-r<i>, 10.a.b.<2+i>) ─veth─┐
 *   the service, this process (root namespace, 10.a.b.1) ─veth─ bridge (namespace <id>-br)
 *
 * A node is cut off by setting its link's bridge end down: what it sends and what is sent to it
 * is dropped without a word, as a broken switch port or cable would, and its sockets stay open.
 * Mended, the same connections carry on. Needs root (or CAP_NET_ADMIN) and iproute2; where
 * `ip netns add` is refused, netnsUnavailable() says why and the partition scenarios skip.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Where the replicas of a cluster run: replica i in namespaces[i], listening on hosts[i]. */
export interface ReplicaPlaces {
  namespaces: string[];
  hosts: string[];
}

/** A node of the mesh: replica i, or the service (the processes of the root namespace). */
export type MeshNode = number | 'service';

export interface Mesh extends ReplicaPlaces {
  /** Drops everything to and from the node until mend(node). */
  cut(node: MeshNode): Promise<void>;
  mend(node: MeshNode): Promise<void>;
  /** Removes the namespaces and links (also done when the process exits). */
  remove(): void;
}

/** Namespaces of meshes not yet removed: removed when the process exits, whatever happened. */
const liveNamespaces = new Set<string>();
process.on('exit', () => {
  for (const namespace of liveNamespaces) removeNamespace(namespace);
});

function removeNamespace(namespace: string): void {
  try {
    execFileSync('ip', ['netns', 'del', namespace], { stdio: 'ignore' });
  } catch {
    // already gone
  }
  liveNamespaces.delete(namespace);
}

let availability: { why?: string } | undefined;

/**
 * Why no mesh can be made here (no iproute2, or namespaces refused: not root), else undefined.
 * Tried once, by adding and deleting a namespace.
 */
export function netnsUnavailable(): string | undefined {
  if (availability === undefined) {
    const probe = `tbprobe${randomBytes(3).toString('hex')}`;
    try {
      execFileSync('ip', ['netns', 'add', probe], { stdio: ['ignore', 'ignore', 'pipe'] });
      removeNamespace(probe);
      availability = {};
    } catch (error) {
      const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
      availability = {
        why: `\`ip netns add\` is not permitted here: ${stderr || (error as Error).message}`,
      };
    }
  }
  return availability.why;
}

const ip = async (...args: string[]): Promise<void> => {
  await execFileAsync('ip', args);
};

/** A /24 in 10.0.0.0/8 that no route of this machine's covers yet. */
function freeSubnet(): string {
  const routes = execFileSync('ip', ['-4', 'route', 'show', 'table', 'all'], { encoding: 'utf8' });
  for (;;) {
    const [a, b] = randomBytes(2);
    const subnet = `10.${200 + (a! % 50)}.${b!}`;
    if (!routes.includes(`${subnet}.`)) return subnet;
  }
}

/** Makes a mesh of `replicas` replica namespaces and the service, all links up. */
export async function createMesh(replicas: number): Promise<Mesh> {
  const why = netnsUnavailable();
  if (why !== undefined) throw new Error(why);
  // Interface names have at most 15 characters: 'tbp' + 4 hex + role (+ 'p' for a bridge end).
  const id = `tbp${randomBytes(2).toString('hex')}`;
  const subnet = freeSubnet();
  const bridgeNs = `${id}-br`;
  const namespaces = Array.from({ length: replicas }, (_, i) => `${id}-r${i}`);
  const hosts = namespaces.map((_, i) => `${subnet}.${2 + i}`);
  /** The bridge end of each node's link. */
  const port = (node: MeshNode): string => `${id}${node === 'service' ? 's' : `r${node}`}p`;
  const remove = (): void => {
    for (const namespace of [bridgeNs, ...namespaces]) removeNamespace(namespace);
  };
  try {
    for (const namespace of [bridgeNs, ...namespaces]) {
      await ip('netns', 'add', namespace);
      liveNamespaces.add(namespace);
      await ip('-n', namespace, 'link', 'set', 'lo', 'up');
    }
    await ip('-n', bridgeNs, 'link', 'add', 'br0', 'type', 'bridge');
    await ip('-n', bridgeNs, 'link', 'set', 'br0', 'up');
    const attach = async (node: MeshNode): Promise<void> => {
      await ip('-n', bridgeNs, 'link', 'set', port(node), 'master', 'br0');
      await ip('-n', bridgeNs, 'link', 'set', port(node), 'up');
    };
    for (const [i, namespace] of namespaces.entries()) {
      const end = `${id}r${i}`;
      await ip(
        ...['link', 'add', end, 'netns', namespace, 'type', 'veth'],
        ...['peer', 'name', port(i), 'netns', bridgeNs],
      );
      await ip('-n', namespace, 'addr', 'add', `${hosts[i]}/24`, 'dev', end);
      await ip('-n', namespace, 'link', 'set', end, 'up');
      await attach(i);
    }
    // The service's end stays in the root namespace: deleting the bridge's namespace deletes it.
    const serviceEnd = `${id}s`;
    await ip(
      ...['link', 'add', serviceEnd, 'type', 'veth'],
      ...['peer', 'name', port('service'), 'netns', bridgeNs],
    );
    await ip('addr', 'add', `${subnet}.1/24`, 'dev', serviceEnd);
    await ip('link', 'set', serviceEnd, 'up');
    await attach('service');
  } catch (error) {
    remove();
    throw error;
  }
  return {
    namespaces,
    hosts,
    cut: (node) => ip('-n', bridgeNs, 'link', 'set', port(node), 'down'),
    mend: (node) => ip('-n', bridgeNs, 'link', 'set', port(node), 'up'),
    remove,
  };
}
