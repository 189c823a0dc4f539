/**
 * Deployment files, validated without a container engine (none runs on these machines):
 *
 *  - docker-compose.yml through `docker-compose config` (Debian's docker-compose 1.29), then its
 *    service environment against the config module, and the TigerBeetle replicas' addresses;
 *    its replica entrypoint is run here against the real server binary;
 *  - helm/central-ledger through `helm lint` and `helm template`, then the rendered manifests;
 *    the chart's replica script (format / recover / refuse) and the service's address resolver
 *    are run here against the real server binary;
 *  - the Dockerfile's instructions, its HEALTHCHECK command, and what its stages copy;
 *  - scripts/local-stack.sh, started and stopped for real.
 *
 * A missing tool (docker-compose, helm, python3 with PyYAML to read YAML, the tigerbeetle binary)
 * skips the tests that need it, loudly.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { builtinModules } from 'node:module';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { ConfigError, ENVIRONMENT, loadConfig } from '../src/config/config';
import { loadMojaloopConfig } from '../src/config/mojaloop';
import { readDockerfile, stageCommand, stageEnvironment, stageWorkdir } from './support/dockerfile';
import { liveDirs, stopChild, track } from './support/leftovers';
import { freePorts } from './support/net';
import { tigerbeetleBinary } from './support/tigerbeetle-cluster';

const ROOT = resolve(__dirname, '..');
const CHART = join(ROOT, 'helm', 'central-ledger');
const OVERLAY_FILE = join(ROOT, 'helm', 'mojaloop-overlay', 'values.yaml');
/** A TIGERBEETLE section's replica endpoints, REPLICA_ENDPOINT_01, _02, ... in order. */
function replicaEndpoints(section: Record<string, unknown>): unknown[] {
  return Object.keys(section)
    .filter((key) => /^REPLICA_ENDPOINT_\d\d$/.test(key))
    .sort()
    .map((key) => section[key]);
}
const CONFIG_NAMES = new Set(ENVIRONMENT.map((v) => v.name));
/** The config module also reads CONFIG_FILE (a JSON file under the environment). */
const CONFIG_FILE_VARIABLE = 'CONFIG_FILE';
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  main: string;
  dependencies: Record<string, string>;
  devDependencies?: Record<string, string>;
};
const TIGERBEETLE_VERSION = PACKAGE.dependencies['tigerbeetle-node']!;
/** Where each environment says its dependencies are: never in deploy/service.env. */
const LOCATION_VARIABLES = [
  'HOST',
  'TB_CLUSTER_ID',
  'TB_ADDRESSES',
  'MYSQL_ENABLED',
  'MYSQL_HOST',
  'MYSQL_PORT',
  'MYSQL_USER',
  'MYSQL_PASSWORD',
  'MYSQL_DATABASE',
  'KAFKA_ENABLED',
  'KAFKA_BROKERS',
];

// ---------------------------------------------------------------------------------------------
// Tools, each found once; a missing one makes its tests skip loudly.

function loudSkip(t: TestContext, why: string): void {
  process.stderr.write(`\n*** SKIPPED: ${t.name}: ${why} ***\n\n`);
  t.skip(why);
}

function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {},
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(command, args, {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? process.env,
    input: options.input,
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error !== undefined && (result.error as NodeJS.ErrnoException).code !== 'ETIMEDOUT')
    throw result.error;
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

function onPath(command: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(':')) {
    if (dir !== '' && existsSync(join(dir, command))) return join(dir, command);
  }
  return undefined;
}

const dockerCompose = onPath('docker-compose');
const helm = ((): string | undefined => {
  const found = onPath('helm');
  if (found !== undefined) return found;
  if (onPath('go') === undefined) return undefined;
  const gopath = run('go', ['env', 'GOPATH']).stdout.trim();
  const candidate = join(gopath, 'bin', 'helm');
  return gopath !== '' && existsSync(candidate) ? candidate : undefined;
})();
const tigerbeetle = tigerbeetleBinary();
const python = ((): string | undefined => {
  for (const candidate of ['python3', '/usr/bin/python3']) {
    try {
      if (run(candidate, ['-c', 'import yaml']).status === 0) return candidate;
    } catch {
      // not installed
    }
  }
  return undefined;
})();

const NO_COMPOSE = 'docker-compose not installed (Debian: apt-get install -y docker-compose)';
const NO_HELM =
  'helm not found on PATH or in $(go env GOPATH)/bin (go install helm.sh/helm/v3/cmd/helm@v3.22.0)';
const NO_PYTHON =
  'no python3 with PyYAML to read YAML (Debian: python3-yaml, which docker-compose installs)';
const NO_TIGERBEETLE = 'no TigerBeetle server binary ($TIGERBEETLE_BIN or tigerbeetle on PATH)';

/** YAML (one or more documents) to JSON values, via PyYAML: the project has no YAML parser. */
function parseYaml(text: string): unknown[] {
  const result = run(
    python!,
    [
      '-c',
      'import sys, json, yaml; json.dump([d for d in yaml.safe_load_all(sys.stdin) if d is not None], sys.stdout)',
    ],
    { input: text },
  );
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as unknown[];
}

// ---------------------------------------------------------------------------------------------
// Processes and ports of the tests that run servers; nothing may outlive the test file.

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  liveDirs.add(dir);
  return dir;
}

function background(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  logFile: string,
): ChildProcess {
  const out = openSync(logFile, 'a');
  const child = spawn(command, args, { env, stdio: ['ignore', out, out] });
  closeSync(out); // the child has its own copy
  return track(child);
}

const stopBackground = (child: ChildProcess): Promise<void> => stopChild(child, 5000);

/**
 * Bound on a replica start: formatting, memory locking and a view change take seconds on a quiet
 * machine and far more on a busy one (two of 211 runs missed a 20–30 s bound there). A healthy
 * cluster answers at once, so the bound costs nothing; a replica that dies fails the wait at once.
 */
const REPLICA_START_TIMEOUT_S = 120;

/** The repl's answer to one command, or undefined when the cluster does not answer in time. */
function repl(
  clusterId: string,
  addresses: string,
  command: string,
  timeoutS = REPLICA_START_TIMEOUT_S,
): string | undefined {
  const result = run(
    'timeout',
    [
      String(timeoutS),
      tigerbeetle!,
      'repl',
      `--cluster=${clusterId}`,
      `--addresses=${addresses}`,
      `--command=${command}`,
    ],
    { timeoutMs: (timeoutS + 5) * 1000 },
  );
  const output = result.stdout + result.stderr;
  if (result.status === 0 || output.includes('No accounts were found')) return result.stdout;
  return undefined;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

/** Waits until every port accepts connections; fails at once if one of `processes` has exited. */
async function waitForPorts(
  ports: number[],
  processes: readonly (ChildProcess | undefined)[] = [],
): Promise<void> {
  const deadline = Date.now() + REPLICA_START_TIMEOUT_S * 1000;
  for (const port of ports) {
    while (!(await portOpen(port))) {
      const exited = processes.find(
        (p) => p !== undefined && (p.exitCode !== null || p.signalCode !== null),
      );
      if (exited !== undefined)
        throw new Error(
          `a replica process exited (${exited.exitCode ?? exited.signalCode}) before port ${port} opened`,
        );
      if (Date.now() > deadline)
        throw new Error(`port ${port} did not open within ${REPLICA_START_TIMEOUT_S} s`);
      await new Promise((done) => setTimeout(done, 200));
    }
  }
}

/** KEY=VALUE lines (the env_file format), comments and blank lines skipped. */
function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    assert.ok(eq > 0, `not KEY=VALUE: ${line}`);
    env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return env;
}

const SERVICE_ENV = parseEnvFile(readFileSync(join(ROOT, 'deploy', 'service.env'), 'utf8'));

function assertConfigNames(names: Iterable<string>, where: string, extra: string[] = []): void {
  for (const name of names) {
    assert.ok(
      CONFIG_NAMES.has(name) || extra.includes(name),
      `${where}: ${name} is not a config-module variable (src/config.ts ENVIRONMENT)`,
    );
  }
}

// ---------------------------------------------------------------------------------------------

describe('deploy/service.env: the service settings compose and the local stack share', () => {
  test('only config-module names, none of the per-environment ones, and every value loads', () => {
    assertConfigNames(Object.keys(SERVICE_ENV), 'deploy/service.env');
    for (const name of LOCATION_VARIABLES)
      assert.ok(!(name in SERVICE_ENV), `${name} is per environment: not in deploy/service.env`);
    assert.equal(SERVICE_ENV['LEDGER_BACKEND'], 'tigerbeetle');
    assert.doesNotThrow(() => loadConfig(SERVICE_ENV));
  });
});

describe('docker-compose.yml', () => {
  interface ComposeService {
    image?: string;
    build?: unknown;
    entrypoint?: string[];
    environment?: Record<string, string | number>;
    env_file?: string[];
    depends_on?: Record<string, { condition: string }>;
    healthcheck?: { test: string[] };
    networks?: Record<string, { ipv4_address?: string } | null>;
    /** "source:target:mode" (Compose v1) or the long syntax (v2). */
    volumes?: (string | { source: string; target: string })[];
  }
  interface Compose {
    services: Record<string, ComposeService>;
    networks: Record<string, { ipam: { config: { subnet: string; ip_range?: string }[] } }>;
  }
  const REPLICAS = ['tigerbeetle-0', 'tigerbeetle-1', 'tigerbeetle-2'];

  function composeConfig(t: TestContext, env: NodeJS.ProcessEnv = {}): Compose | undefined {
    if (dockerCompose === undefined) {
      loudSkip(t, NO_COMPOSE);
      return undefined;
    }
    if (python === undefined) {
      loudSkip(t, NO_PYTHON);
      return undefined;
    }
    const result = run(dockerCompose, ['-f', 'docker-compose.yml', 'config'], {
      env: { ...process.env, ...env },
    });
    assert.equal(result.status, 0, `docker-compose config failed:\n${result.stderr}`);
    return parseYaml(result.stdout)[0] as Compose;
  }

  function serviceEnvironment(compose: Compose): Record<string, string> {
    return Object.fromEntries(
      Object.entries(compose.services['central-ledger']!.environment ?? {}).map(([k, v]) => [
        k,
        String(v),
      ]),
    );
  }

  function checkAddresses(compose: Compose, prefix: string): void {
    const env = serviceEnvironment(compose);
    const addresses = env['TB_ADDRESSES']!.split(',');
    assert.deepEqual(
      addresses,
      REPLICAS.map((_, i) => `${prefix}.${11 + i}:3000`),
    );
    const subnet = compose.networks['ledger']!.ipam.config[0]!;
    assert.equal(subnet.subnet, `${prefix}.0/24`);
    assert.equal(
      subnet.ip_range,
      `${prefix}.128/25`,
      'dynamic addresses must stay clear of the replicas',
    );
    for (const [i, name] of REPLICAS.entries()) {
      const replica = compose.services[name]!;
      const replicaEnv = replica.environment!;
      // The same list, in the same order, on every replica and the service; addresses[i] is replica
      // i.
      assert.equal(String(replicaEnv['TB_ADDRESSES']), env['TB_ADDRESSES'], `${name} --addresses`);
      assert.equal(String(replicaEnv['TB_REPLICA']), String(i));
      assert.equal(String(replicaEnv['TB_CLUSTER_ID']), env['TB_CLUSTER_ID'], `${name} cluster id`);
      assert.equal(
        replica.networks!['ledger']!.ipv4_address,
        addresses[i]!.split(':')[0],
        `${name} has addresses[${i}]`,
      );
    }
  }

  test('docker-compose config validates it; the service environment loads as a TigerBeetle config', (t) => {
    const compose = composeConfig(t);
    if (compose === undefined) return;
    const service = compose.services['central-ledger']!;
    assert.ok(service.build !== undefined, 'the service is built from the Dockerfile');
    const env = serviceEnvironment(compose);
    assertConfigNames(Object.keys(env), 'central-ledger environment');
    // env_file (deploy/service.env) is merged in, and nothing overrides it.
    for (const [name, value] of Object.entries(SERVICE_ENV))
      assert.equal(env[name], value, `${name} from deploy/service.env`);
    const config = loadConfig(env);
    assert.equal(config.ledger.backend, 'tigerbeetle');
    assert.equal(config.ledger.tigerbeetle.addresses.length, 3);
    assert.equal(config.http.host, '0.0.0.0');
    assert.equal(config.http.port, 3001);
    assert.equal(config.mysql.enabled, true);
    assert.equal(config.mysql.host, 'mysql');
    assert.equal(config.kafka.enabled, true);
    assert.deepEqual(config.kafka.brokers, ['kafka:9092']);
    // The MySQL container is given the same credentials.
    const mysql = compose.services['mysql']!.environment!;
    for (const name of ['MYSQL_USER', 'MYSQL_PASSWORD', 'MYSQL_DATABASE'])
      assert.equal(String(mysql[name]), env[name], name);
  });

  test('the three replicas and the service list the same addresses in the same order', (t) => {
    const compose = composeConfig(t);
    if (compose === undefined) return;
    checkAddresses(compose, '10.117.13');
    for (const name of REPLICAS) {
      const replica: ComposeService = compose.services[name]!;
      assert.equal(
        replica.image,
        `ghcr.io/tigerbeetle/tigerbeetle:${TIGERBEETLE_VERSION}`,
        'server pinned to the client version',
      );
      const script = replica.entrypoint!.at(-1)!;
      assert.match(script, /--addresses="\$\$TB_ADDRESSES"/);
      const mounts = replica.volumes!.map((v) =>
        typeof v === 'string' ? v.split(':').slice(0, 2).join(':') : `${v.source}:${v.target}`,
      );
      assert.ok(mounts.includes(`${name}:/data`), `${name} has its own volume`);
    }
    // Another subnet moves everything together.
    const moved = composeConfig(t, { TB_SUBNET_PREFIX: '10.250.3' });
    if (moved !== undefined) checkAddresses(moved, '10.250.3');
  });

  test('the service waits for healthy replicas, MySQL and Kafka; each has a healthcheck', (t) => {
    const compose = composeConfig(t);
    if (compose === undefined) return;
    const dependsOn = compose.services['central-ledger']!.depends_on!;
    for (const name of [...REPLICAS, 'mysql', 'kafka']) {
      assert.equal(dependsOn[name]?.condition, 'service_healthy', name);
      assert.ok(compose.services[name]!.healthcheck!.test.length > 0, `${name} healthcheck`);
    }
    for (const name of REPLICAS) {
      // 3000 = 0x0BB8: the port in the addresses is the port the healthcheck looks for.
      assert.match(compose.services[name]!.healthcheck!.test.join(' '), /:0BB8 00000000:0000 0A/);
    }
  });

  test('the replica entrypoint formats once, then only starts (run here with the real binary)', async (t) => {
    const compose = composeConfig(t);
    if (compose === undefined) return;
    if (tigerbeetle === undefined) return loudSkip(t, NO_TIGERBEETLE);
    const dir = tempDir('compose-entrypoint-');
    const ports = await freePorts(3);
    const addresses = ports.map((p) => `127.0.0.1:${p}`).join(',');
    const scripts = REPLICAS.map((name, i) => {
      const data = join(dir, String(i));
      mkdirSync(data);
      // What the container runs, with the image's paths replaced by this machine's.
      return compose.services[name]!.entrypoint!.at(-1)!
        .replaceAll('$$', '$')
        .replaceAll('/tigerbeetle ', `${tigerbeetle} `)
        .replaceAll('/data/', `${data}/`);
    });
    const envOf = (i: number): NodeJS.ProcessEnv => ({
      ...process.env,
      TB_REPLICA: String(i),
      TB_CLUSTER_ID: '0',
      TB_ADDRESSES: addresses,
      TB_CACHE_GRID: '256MiB',
    });
    let replicas = scripts.map((script, i) =>
      background('sh', ['-ec', script], envOf(i), join(dir, `${i}.log`)),
    );
    try {
      await waitForPorts(ports, replicas);
      assert.ok(
        repl('0', addresses, 'create_accounts id=77 code=1 ledger=1')?.includes('created'),
        'the cluster formed and answers',
      );
      const formatted = scripts.map(
        (_, i) => statSync(join(dir, String(i), `0_${i}.tigerbeetle`)).mtimeMs,
      );
      await Promise.all(replicas.map(stopBackground));
      // A restart (the container again, same volume) must not format: the account survives.
      replicas = scripts.map((script, i) =>
        background('sh', ['-ec', script], envOf(i), join(dir, `${i}.log`)),
      );
      await waitForPorts(ports, replicas);
      assert.match(repl('0', addresses, 'lookup_accounts id=77') ?? '', /"id": "77"/);
      for (const [i, mtime] of formatted.entries()) {
        const log = readFileSync(join(dir, `${i}.log`), 'utf8');
        assert.equal(
          log.split('formatted: cluster=0').length - 1,
          1,
          `replica ${i} formatted exactly once`,
        );
        assert.ok(statSync(join(dir, String(i), `0_${i}.tigerbeetle`)).mtimeMs >= mtime);
      }
    } finally {
      await Promise.all(replicas.map(stopBackground));
    }
  });
});

describe('helm/central-ledger', () => {
  interface Manifest {
    kind: string;
    metadata: { name: string; annotations?: Record<string, string> };
    spec?: any;
    data?: Record<string, string>;
  }
  const CLUSTER_ID = [
    '--set-string',
    'tigerbeetle.clusterId=340282366920938463463374607431768211455',
  ];
  const REQUIRED = [...CLUSTER_ID, '--set', 'mysql.password=test-only'];
  const KUBE = ['--kube-version', '1.30.0'];

  /** `settings`: the values the chart requires; `release`: the release's name. */
  function template(
    t: TestContext,
    args: string[] = [],
    { settings = REQUIRED, release = 'hub' } = {},
  ): Manifest[] | undefined {
    if (helm === undefined) {
      loudSkip(t, NO_HELM);
      return undefined;
    }
    if (python === undefined) {
      loudSkip(t, NO_PYTHON);
      return undefined;
    }
    const result = run(helm, [
      'template',
      release,
      CHART,
      '--namespace',
      'ledger',
      ...KUBE,
      ...settings,
      ...args,
    ]);
    assert.equal(result.status, 0, `helm template failed:\n${result.stderr}`);
    return parseYaml(result.stdout) as Manifest[];
  }
  function one(manifests: Manifest[], kind: string, name?: string): Manifest {
    const found = manifests.filter(
      (m) => m.kind === kind && (name === undefined || m.metadata.name === name),
    );
    assert.equal(found.length, 1, `exactly one ${kind} ${name ?? ''}`);
    return found[0]!;
  }
  function envValue(container: any, name: string): string {
    const entry = (container.env as { name: string; value?: string }[]).find(
      (e) => e.name === name,
    );
    assert.ok(entry?.value !== undefined, `${container.name} has ${name}`);
    return entry.value;
  }

  test('helm lint passes, and refuses to render without a cluster id or a MySQL password', (t) => {
    if (helm === undefined) return loudSkip(t, NO_HELM);
    const lint = run(helm, ['lint', '--strict', CHART, ...REQUIRED]);
    assert.equal(lint.status, 0, lint.stdout + lint.stderr);
    const noClusterId = run(helm, ['template', 'hub', CHART, ...KUBE, '--set', 'mysql.password=x']);
    assert.notEqual(noClusterId.status, 0);
    assert.match(noClusterId.stderr, /tigerbeetle\.clusterId must be set/);
    const noPassword = run(helm, [
      'template',
      'hub',
      CHART,
      ...KUBE,
      '--set-string',
      'tigerbeetle.clusterId=1',
    ]);
    assert.notEqual(noPassword.status, 0);
    assert.match(noPassword.stderr, /mysql\.existingSecret .* or mysql\.password/);
    const tooBig = run(helm, [
      'template',
      'hub',
      CHART,
      ...KUBE,
      '--set',
      'mysql.password=x',
      '--set-string',
      'tigerbeetle.clusterId=340282366920938463463374607431768211456',
    ]);
    assert.match(tooBig.stderr, /does not fit in 128 bits/);
    const reserved = run(helm, [
      'template',
      'hub',
      CHART,
      ...KUBE,
      ...REQUIRED,
      '--set',
      'config.TB_ADDRESSES=1.2.3.4:1',
    ]);
    assert.match(reserved.stderr, /config\.TB_ADDRESSES is set by the chart/);
  });

  test('TigerBeetle: a StatefulSet of 3 with a volume each, a headless Service, one Service per replica, PDB 2', (t) => {
    const manifests = template(t);
    if (manifests === undefined) return;
    const sts = one(manifests, 'StatefulSet');
    const name = sts.metadata.name;
    assert.equal(sts.spec.replicas, 3);
    assert.equal(sts.spec.podManagementPolicy, 'Parallel');
    assert.equal(sts.spec.volumeClaimTemplates.length, 1);
    assert.equal(sts.spec.volumeClaimTemplates[0].metadata.name, 'data');
    assert.deepEqual(sts.spec.volumeClaimTemplates[0].spec.accessModes, ['ReadWriteOnce']);
    const headless = one(manifests, 'Service', sts.spec.serviceName);
    assert.equal(headless.spec.clusterIP, 'None');
    assert.equal(headless.spec.publishNotReadyAddresses, true);
    for (let i = 0; i < 3; i++) {
      const own = one(manifests, 'Service', `${name}-${i}`);
      assert.equal(own.spec.selector['statefulset.kubernetes.io/pod-name'], `${name}-${i}`);
      assert.equal(own.spec.publishNotReadyAddresses, true);
    }
    const pdb = one(manifests, 'PodDisruptionBudget');
    assert.equal(pdb.spec.minAvailable, 2);
    for (const [key, value] of Object.entries(
      pdb.spec.selector.matchLabels as Record<string, string>,
    )) {
      assert.equal(sts.spec.template.metadata.labels[key], value, 'the PDB selects the replicas');
    }
    const [container] = sts.spec.template.spec.containers;
    assert.equal(container.image, `ghcr.io/tigerbeetle/tigerbeetle:${TIGERBEETLE_VERSION}`);
    assert.deepEqual(container.command.slice(0, 2), ['tini', '--']);
  });

  test('--addresses: every replica and the service list all three replicas in order', (t) => {
    const manifests = template(t);
    if (manifests === undefined) return;
    const sts = one(manifests, 'StatefulSet');
    const name = sts.metadata.name;
    const expected = [0, 1, 2].map((i) => `${name}-${i}.ledger.svc.cluster.local:3000`).join(',');
    const [init] = sts.spec.template.spec.initContainers;
    const [main] = sts.spec.template.spec.containers;
    assert.equal(envValue(init, 'TB_REPLICA_ADDRESSES'), expected);
    assert.equal(envValue(main, 'TB_REPLICA_ADDRESSES'), expected);
    assert.equal(envValue(main, 'TB_REPLICA_COUNT'), '3');
    const deployment = one(manifests, 'Deployment');
    const [resolver] = deployment.spec.template.spec.initContainers;
    assert.equal(
      envValue(resolver, 'TB_REPLICA_ADDRESSES'),
      expected,
      'the service resolves the same list',
    );
    // Generated from the replica count.
    const six = template(t, [
      '--set',
      'tigerbeetle.replicas=6',
      '--set',
      'tigerbeetle.podDisruptionBudget.minAvailable=4',
    ]);
    if (six === undefined) return;
    const sixSts = one(six, 'StatefulSet');
    assert.equal(
      envValue(sixSts.spec.template.spec.containers[0], 'TB_REPLICA_ADDRESSES').split(',').length,
      6,
    );
    assert.equal(
      six.filter((m) => m.kind === 'Service' && /-tigerbeetle-\d$/.test(m.metadata.name)).length,
      6,
    );
  });

  test("the init container formats only a new cluster's missing file: the switch per revision", (t) => {
    const manifests = template(t);
    if (manifests === undefined) return;
    const sts = one(manifests, 'StatefulSet');
    const [init] = sts.spec.template.spec.initContainers;
    assert.deepEqual(init.command, ['/bin/sh', '/scripts/tigerbeetle-replica.sh', 'init']);
    const scripts = manifests.find(
      (m) => m.kind === 'ConfigMap' && m.metadata.name.endsWith('-scripts'),
    )!;
    assert.equal(
      scripts.data!['tigerbeetle-replica.sh'],
      readFileSync(join(CHART, 'files', 'tigerbeetle-replica.sh'), 'utf8').trimEnd(),
    );
    const script = scripts.data!['tigerbeetle-replica.sh']!;
    // An existing file returns before any format or recover.
    assert.ok(script.indexOf('if [ -e "$file" ]') < script.indexOf('format --cluster'));
    assert.equal(
      scripts.data!['tigerbeetle-allow-format'],
      'true',
      'helm install of a new release',
    );
    const upgrade = template(t, ['--is-upgrade']);
    if (upgrade === undefined) return;
    assert.equal(
      upgrade.find((m) => m.metadata.name.endsWith('-scripts'))!.data!['tigerbeetle-allow-format'],
      'false',
      'helm upgrade',
    );
    const off = template(t, ['--set', 'tigerbeetle.allowFormat=false']);
    if (off === undefined) return;
    assert.equal(
      off.find((m) => m.metadata.name.endsWith('-scripts'))!.data!['tigerbeetle-allow-format'],
      'false',
    );
  });

  test('replica memory follows the grid cache: request = limit = overhead + cacheGridMiB', (t) => {
    for (const [grid, memory] of [
      [256, '2560Mi'],
      [1024, '3328Mi'],
    ] as const) {
      const manifests = template(t, ['--set', `tigerbeetle.cacheGridMiB=${grid}`]);
      if (manifests === undefined) return;
      for (const container of [
        ...one(manifests, 'StatefulSet').spec.template.spec.initContainers,
        ...one(manifests, 'StatefulSet').spec.template.spec.containers,
      ]) {
        assert.equal(container.resources.requests.memory, memory);
        assert.equal(container.resources.limits.memory, memory);
        assert.equal(envValue(container, 'TB_CACHE_GRID'), `${grid}MiB`);
      }
    }
  });

  test('the service: liveness on /live, readiness and startup on /health, environment of config-module names that loads', async (t) => {
    const manifests = template(t);
    if (manifests === undefined) return;
    const deployment = one(manifests, 'Deployment');
    const [container] = deployment.spec.template.spec.containers;
    const configMap = one(manifests, 'ConfigMap', container.envFrom[0].configMapRef.name);
    const port = Number(configMap.data!['PORT']);
    assert.equal(container.ports[0].containerPort, port);
    for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
      // A ledger or database outage fails /health; restarting pods would not mend it, so liveness
      // asks /live.
      assert.equal(
        container[probe].httpGet.path,
        probe === 'livenessProbe' ? '/live' : '/health',
        probe,
      );
      assert.equal(container[probe].httpGet.port, container.ports[0].name, probe);
    }
    const names = [
      ...Object.keys(configMap.data!),
      ...(container.env as { name: string }[]).map((e) => e.name),
    ];
    assertConfigNames(names, 'service container environment', [CONFIG_FILE_VARIABLE]);
    // The chart's defaults are deploy/service.env's values.
    for (const [name, value] of Object.entries(SERVICE_ENV))
      assert.equal(configMap.data![name], value, `${name} as in deploy/service.env`);
    const secretRef = (
      container.env as {
        name: string;
        valueFrom?: { secretKeyRef: { name: string; key: string } };
      }[]
    ).find((e) => e.name === 'MYSQL_PASSWORD')!.valueFrom!.secretKeyRef;
    const secret = one(manifests, 'Secret', secretRef.name);
    const password = Buffer.from(secret.data![secretRef.key]!, 'base64').toString();
    assert.equal(password, 'test-only');
    // The init container's resolver, run here with names this machine resolves, writes the file
    // CONFIG_FILE names; with the ConfigMap and the Secret the config loads.
    const dir = tempDir('helm-resolver-');
    const output = join(dir, 'config.json');
    const [resolver] = deployment.spec.template.spec.initContainers;
    const entries = envValue(resolver, 'TB_REPLICA_ADDRESSES').split(',');
    const local = entries
      .map((e, i) => (i === 1 ? `127.0.0.1:${e.split(':')[1]}` : `localhost:${e.split(':')[1]}`))
      .join(',');
    const resolved = run('node', [join(CHART, 'files', 'resolve-tigerbeetle-addresses.js')], {
      env: { ...process.env, TB_REPLICA_ADDRESSES: local, OUTPUT_FILE: output },
    });
    assert.equal(resolved.status, 0, resolved.stderr);
    const env = { ...configMap.data!, MYSQL_PASSWORD: password, CONFIG_FILE: output };
    const loopback = JSON.parse(readFileSync(output, 'utf8')).ledger.tigerbeetle
      .addresses as string[];
    assert.equal(loopback.length, 3);
    loopback.forEach((a, i) =>
      assert.match(a, new RegExp(`^(127\\.0\\.0\\.1|\\[::1\\]):${entries[i]!.split(':')[1]}$`)),
    );
    if (loopback.every((a) => a.startsWith('127.'))) {
      const config = loadConfig(env);
      assert.equal(config.ledger.backend, 'tigerbeetle');
      assert.deepEqual(config.ledger.tigerbeetle.addresses, loopback);
      assert.equal(config.ledger.tigerbeetle.clusterId, (1n << 128n) - 1n);
      assert.equal(config.mysql.enabled, true);
      assert.equal(config.mysql.password, 'test-only');
      assert.equal(config.http.host, '0.0.0.0');
    }
  });

  test('serviceEnabled=false: the TigerBeetle cluster alone, no MySQL password needed', (t) => {
    // The release and namespace docs/deploying-into-mojaloop.md installs the cluster as.
    const release = 'central-ledger';
    const manifests = template(t, ['--set', 'serviceEnabled=false'], {
      settings: CLUSTER_ID,
      release,
    });
    if (manifests === undefined) return;
    const kinds = manifests.map((m) => m.kind).sort();
    assert.deepEqual(kinds, [
      'ConfigMap',
      'PodDisruptionBudget',
      'Service',
      'Service',
      'Service',
      'Service',
      'StatefulSet',
    ]);
    const scripts = one(manifests, 'ConfigMap');
    assert.deepEqual(Object.keys(scripts.data!).sort(), [
      'tigerbeetle-allow-format',
      'tigerbeetle-replica.sh',
    ]);
    const full = template(t, [], { release });
    if (full === undefined) return;
    const sts = one(manifests, 'StatefulSet');
    assert.deepEqual(
      sts.spec,
      one(full, 'StatefulSet').spec,
      'the same cluster as with the service',
    );
    // helm/mojaloop-overlay's ledger section names these replicas, in this order.
    const overlay = parseYaml(readFileSync(OVERLAY_FILE, 'utf8'))[0] as any;
    assert.deepEqual(
      replicaEndpoints(
        overlay.centralledger['centralledger-service'].configOverride['.CLEDGrc'].TIGERBEETLE,
      ),
      envValue(sts.spec.template.spec.containers[0], 'TB_REPLICA_ADDRESSES').split(','),
    );
    const lint = run(helm!, [
      'lint',
      '--strict',
      CHART,
      ...CLUSTER_ID,
      '--set',
      'serviceEnabled=false',
    ]);
    assert.equal(lint.status, 0, lint.stdout + lint.stderr);
  });

  test('Chart.yaml appVersion is the package version; values.yaml documents every value', () => {
    const chart = readFileSync(join(CHART, 'Chart.yaml'), 'utf8');
    assert.match(chart, new RegExp(`^appVersion: "${PACKAGE.version}"$`, 'm'));
    const values = readFileSync(join(CHART, 'values.yaml'), 'utf8').split('\n');
    values.forEach((line, i) => {
      if (!/^\s*[A-Za-z_][\w.-]*:/.test(line)) return;
      assert.match(
        values[i - 1] ?? '',
        /^\s*#/,
        `values.yaml:${i + 1} "${line.trim()}" has no comment above it`,
      );
    });
    assert.match(
      readFileSync(join(CHART, 'values.yaml'), 'utf8'),
      new RegExp(`tag: "${TIGERBEETLE_VERSION}"`),
    );
  });
});

describe('helm/mojaloop-overlay: values for mojaloop/helm v17.3.0', () => {
  /**
   * A checkout of mojaloop/helm at v17.3.0 with its charts' dependencies built (`helm dependency
   * build` in centralledger/ and centralsettlement/): it lives outside this repository.
   */
  const MOJALOOP_HELM = process.env['MOJALOOP_HELM_DIR'];
  const NO_MOJALOOP_HELM =
    'MOJALOOP_HELM_DIR does not name a checkout of mojaloop/helm v17.3.0 (git clone --branch ' +
    'v17.3.0 https://github.com/mojaloop/helm; helm dependency build in centralledger/ and ' +
    'centralsettlement/), so the overlay was not rendered with the official charts';
  const HANDLER = ['node', 'src/handlers/index.js', 'handler'];
  /** The `command` values of mojaloop/helm v17.3.0's central-ledger subcharts, per subchart. */
  const CHART_COMMANDS: Record<string, string[]> = {
    'centralledger-service': ['node', 'src/api/index.js'],
    'centralledger-handler-transfer-prepare': [...HANDLER, '--prepare'],
    'centralledger-handler-transfer-position': [...HANDLER, '--position'],
    'centralledger-handler-transfer-position-batch': [...HANDLER, '--positionbatch'],
    'centralledger-handler-transfer-get': [...HANDLER, '--get'],
    'centralledger-handler-transfer-fulfil': [...HANDLER, '--fulfil'],
    'centralledger-handler-timeout': [...HANDLER, '--timeout'],
    'centralledger-handler-admin-transfer': [...HANDLER, '--admin'],
  };
  interface Subchart {
    enabled?: boolean;
    image?: { repository: string; tag: string };
    command?: unknown;
    configOverride?: Record<string, { TIGERBEETLE: LedgerSection }>;
  }
  interface LedgerSection {
    ENABLED: boolean;
    CLUSTER: unknown;
    [replicaEndpoint: string]: unknown;
  }
  interface Overlay {
    centralledger: Record<string, Subchart>;
    centralsettlement: Record<string, Subchart>;
    'mojaloop-bulk': { 'bulk-centralledger': Record<string, Subchart> };
  }
  interface Resource {
    kind: string;
    metadata: { name: string };
    spec?: any;
    data?: Record<string, string>;
  }

  function overlay(t: TestContext): Overlay | undefined {
    if (python === undefined) {
      loudSkip(t, NO_PYTHON);
      return undefined;
    }
    return parseYaml(readFileSync(OVERLAY_FILE, 'utf8'))[0] as Overlay;
  }

  test('every central-ledger Deployment gets the image and the ledger section, no command', (t) => {
    const values = overlay(t);
    if (values === undefined) return;
    const ledger = values.centralledger;
    assert.deepEqual(Object.keys(ledger).sort(), Object.keys(CHART_COMMANDS).sort());
    const image = ledger['centralledger-service']!.image!;
    const section = ledger['centralledger-service']!.configOverride!['.CLEDGrc']!.TIGERBEETLE;
    for (const [name, subchart] of Object.entries(ledger)) {
      assert.deepEqual(subchart.image, image, name);
      assert.deepEqual(Object.keys(subchart.configOverride!), ['.CLEDGrc'], name);
      assert.deepEqual(subchart.configOverride!['.CLEDGrc']!.TIGERBEETLE, section, name);
      assert.equal(subchart.command, undefined, `${name} keeps the chart's command`);
      assert.equal(subchart.enabled, undefined, `${name} keeps the chart's switch`);
    }
    assert.equal(section.ENABLED, true);
    assert.equal(typeof section.CLUSTER, 'string', 'a 128-bit id survives only as a string');
    assert.equal(replicaEndpoints(section).length, 3);
    const settlement = values.centralsettlement;
    const service = settlement['centralsettlement-service']!;
    assert.deepEqual(service.image, image);
    assert.deepEqual(Object.keys(service.configOverride!), ['.CSETrc']);
    assert.deepEqual(service.configOverride!['.CSETrc']!.TIGERBEETLE, section);
    assert.equal(service.command, undefined);
    for (const handler of ['deferredsettlement', 'grosssettlement', 'rules'])
      assert.equal(settlement[`centralsettlement-handler-${handler}`]!.enabled, false, handler);
    const bulk = values['mojaloop-bulk']['bulk-centralledger'];
    assert.deepEqual(
      Object.keys(bulk).sort(),
      ['fulfil', 'get', 'prepare', 'processing'].map((h) => `cl-handler-bulk-transfer-${h}`),
    );
    for (const [name, subchart] of Object.entries(bulk)) {
      assert.deepEqual(subchart.image, image, name);
      assert.deepEqual(subchart.configOverride!['.CLEDGrc']!.TIGERBEETLE, section, name);
      assert.equal(subchart.command, undefined, `${name} keeps the chart's command`);
    }
  });

  test('its .CLEDGrc and .CSETrc are the rc files read: a TigerBeetle ledger once CLUSTER is set', (t) => {
    const values = overlay(t);
    if (values === undefined) return;
    // central-settlement's file is known by its own keys; central-ledger's is the image's own.
    const settlementConfig = tempDir('mojaloop-cset-config-');
    writeFileSync(
      join(settlementConfig, 'default.json'),
      JSON.stringify({ PORT: 3007, WINDOW_AGGREGATION: { RETRY_COUNT: 3 } }),
    );
    const cases = [
      ['central-ledger', values.centralledger['centralledger-service']!, join(ROOT, 'config')],
      [
        'central-settlement',
        values.centralsettlement['centralsettlement-service']!,
        settlementConfig,
      ],
    ] as const;
    for (const [service, subchart, configDir] of cases) {
      const [name, file] = Object.entries(subchart.configOverride!)[0]!;
      const dir = tempDir('mojaloop-rc-');
      const load = (rc: unknown): ReturnType<typeof loadMojaloopConfig> => {
        // The chart mounts the entry at /opt/app/<name>, the working directory.
        writeFileSync(join(dir, name), JSON.stringify(rc, null, 2));
        return loadMojaloopConfig({ configDir, env: { HOME: dir }, argv: [], cwd: dir });
      };
      assert.throws(
        () => load(file),
        (error: Error) =>
          error instanceof ConfigError &&
          /TIGERBEETLE\.CLUSTER .*is not a cluster id/.test(error.message),
        `${service}: the placeholder is refused, naming the key`,
      );
      const clusterId = '340282366920938463463374607431768211455';
      const loaded = load({ TIGERBEETLE: { ...file.TIGERBEETLE, CLUSTER: clusterId } });
      assert.equal(loaded.service, service);
      assert.equal(loaded.config.ledger.backend, 'tigerbeetle', service);
      assert.equal(loaded.config.ledger.tigerbeetle.clusterId, (1n << 128n) - 1n);
      assert.deepEqual(
        loaded.config.ledger.tigerbeetle.addresses,
        replicaEndpoints(file.TIGERBEETLE),
        service,
      );
    }
  });

  /**
   * The overlay, and its values for one umbrella subchart rendered with that chart's sources;
   * undefined (skipped loudly) without helm or the sources.
   */
  function render(
    t: TestContext,
    chart: 'centralledger' | 'centralsettlement',
  ): { values: Overlay; resources: Resource[] } | undefined {
    if (helm === undefined) {
      loudSkip(t, NO_HELM);
      return undefined;
    }
    if (MOJALOOP_HELM === undefined || !existsSync(join(MOJALOOP_HELM, chart))) {
      loudSkip(t, NO_MOJALOOP_HELM);
      return undefined;
    }
    const values = overlay(t);
    if (values === undefined) return undefined;
    const file = join(tempDir('mojaloop-overlay-'), `${chart}.json`);
    writeFileSync(file, JSON.stringify(values[chart]));
    const result = run(helm, [
      'template',
      'moja',
      join(MOJALOOP_HELM, chart),
      '--namespace',
      'mojaloop',
      '-f',
      file,
    ]);
    assert.equal(result.status, 0, `helm template ${chart} failed:\n${result.stderr}`);
    return { values, resources: parseYaml(result.stdout) as Resource[] };
  }
  /** The Deployment's or Job's container and the JSON of the override file it mounts at `at`. */
  function mounted(resources: Resource[], workload: Resource, at: string): unknown {
    const pod = workload.spec.template.spec;
    const container = pod.containers[0];
    const mount = (
      container.volumeMounts as { name: string; mountPath: string; subPath?: string }[]
    ).find((m) => m.mountPath === at);
    assert.ok(mount !== undefined, `${workload.metadata.name} mounts ${at}`);
    const volume = (pod.volumes as { name: string; configMap?: { name: string } }[]).find(
      (v) => v.name === mount.name,
    )!;
    const configMap = resources.find(
      (r) => r.kind === 'ConfigMap' && r.metadata.name === volume.configMap!.name,
    );
    assert.ok(configMap !== undefined, `${workload.metadata.name}: ConfigMap of ${at} rendered`);
    return JSON.parse(configMap.data![mount.subPath!]!);
  }

  test('renders with the official centralledger chart: images, commands, mounts, env', (t) => {
    const rendered = render(t, 'centralledger');
    if (rendered === undefined) return;
    const { values, resources } = rendered;
    const service = values.centralledger['centralledger-service']!;
    const image = `${service.image!.repository}:${service.image!.tag}`;
    const expected = { TIGERBEETLE: service.configOverride!['.CLEDGrc']!.TIGERBEETLE };
    const deployments = resources.filter((r) => r.kind === 'Deployment');
    const commands = new Set<string>();
    for (const deployment of deployments) {
      const container = deployment.spec.template.spec.containers[0];
      assert.equal(container.image, image, deployment.metadata.name);
      commands.add(JSON.stringify(container.command));
      assert.deepEqual(mounted(resources, deployment, '/opt/app/.CLEDGrc'), expected);
      const mountPaths = (container.volumeMounts as { mountPath: string }[]).map(
        (m) => m.mountPath,
      );
      assert.ok(mountPaths.includes('/opt/app/config'), 'config/default.json beside src/');
      const env = (container.env as { name: string }[]).map((e) => e.name);
      assert.ok(env.includes('CLEDG_DATABASE__PASSWORD'), deployment.metadata.name);
      assert.ok(env.includes('LOG_LEVEL'), deployment.metadata.name);
    }
    const known = new Set(Object.values(CHART_COMMANDS).map((c) => JSON.stringify(c)));
    for (const command of commands) assert.ok(known.has(command), `unexpected ${command}`);
    for (const name of Object.keys(CHART_COMMANDS).filter((n) => !n.endsWith('-batch')))
      assert.ok(commands.has(JSON.stringify(CHART_COMMANDS[name])), `${name} deployed`);
    const migration = resources.find((r) => r.kind === 'Job');
    assert.ok(migration !== undefined, 'the migration Job');
    const [job] = migration.spec.template.spec.containers;
    assert.equal(job.image, image);
    assert.deepEqual(job.command, ['sh', '-c', 'npm run migrate']);
    assert.deepEqual(mounted(resources, migration, '/opt/app/.CLEDGrc'), expected);
  });

  test('renders with the official centralsettlement chart: the v2 API alone, on 3007', (t) => {
    const rendered = render(t, 'centralsettlement');
    if (rendered === undefined) return;
    const { values, resources } = rendered;
    const service = values.centralsettlement['centralsettlement-service']!;
    const deployments = resources.filter((r) => r.kind === 'Deployment');
    assert.equal(deployments.length, 1, 'the handlers are off');
    const [container] = deployments[0]!.spec.template.spec.containers;
    assert.equal(container.image, `${service.image!.repository}:${service.image!.tag}`);
    assert.deepEqual(container.command, ['node', 'src/api/index.js']);
    assert.equal(container.ports[0].containerPort, 3007);
    assert.equal(container.readinessProbe.httpGet.path, '/v2/health');
    assert.deepEqual(mounted(resources, deployments[0]!, '/opt/app/.CSETrc'), {
      TIGERBEETLE: service.configOverride!['.CSETrc']!.TIGERBEETLE,
    });
  });
});

describe('helm/central-ledger/files/tigerbeetle-replica.sh (run here with the real binary)', () => {
  const SCRIPT = join(CHART, 'files', 'tigerbeetle-replica.sh');

  test('formats a new cluster, starts a formatted replica as is, recovers a lost volume, refuses otherwise', async (t) => {
    if (tigerbeetle === undefined) return loudSkip(t, NO_TIGERBEETLE);
    const dir = tempDir('replica-script-');
    const ports = await freePorts(3);
    // "localhost" exercises the name resolution; the bind host stays on the loopback here.
    const entries = ports.map((p, i) => (i === 1 ? `127.0.0.1:${p}` : `localhost:${p}`)).join(',');
    const addresses = ports.map((p) => `127.0.0.1:${p}`).join(',');
    const clusterId = '4242';
    const envOf = (i: number, allowFormat: boolean): NodeJS.ProcessEnv => ({
      ...process.env,
      POD_NAME: `hub-central-ledger-tigerbeetle-${i}`,
      TB_CLUSTER_ID: clusterId,
      TB_REPLICA_COUNT: '3',
      TB_REPLICA_ADDRESSES: entries,
      TB_BIND_HOST: '127.0.0.1',
      TB_CACHE_GRID: '256MiB',
      TB_ALLOW_FORMAT: String(allowFormat),
      TB_DATA_DIR: join(dir, String(i)),
      TB_BIN: tigerbeetle,
      TB_PROBE_TIMEOUT_S: '3',
    });
    const file = (i: number): string => join(dir, String(i), `${clusterId}_${i}.tigerbeetle`);
    const init = (i: number, allowFormat: boolean): { status: number | null; stderr: string } =>
      run('sh', [SCRIPT, 'init'], { env: envOf(i, allowFormat), timeoutMs: 60_000 });
    const start = (i: number): ChildProcess =>
      background('sh', [SCRIPT, 'start'], envOf(i, false), join(dir, `${i}.log`));
    for (const i of [0, 1, 2]) mkdirSync(join(dir, String(i)));

    const replicas: (ChildProcess | undefined)[] = [];
    try {
      // 1. A new cluster: nobody answers, formatting allowed: all three format.
      const inits = await Promise.all(
        [0, 1, 2].map(
          (i) =>
            new Promise<{ status: number | null; stderr: string }>((done) => {
              const child = spawn('sh', [SCRIPT, 'init'], { env: envOf(i, true) });
              let stderr = '';
              child.stderr.on('data', (chunk: Buffer) => {
                stderr += chunk.toString();
              });
              child.once('exit', (status) => done({ status, stderr }));
            }),
        ),
      );
      inits.forEach((r, i) => {
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stderr, /formatting/, `replica ${i}`);
      });
      for (const i of [0, 1, 2]) replicas[i] = start(i);
      await waitForPorts(ports, replicas);
      assert.match(
        readFileSync(join(dir, '0.log'), 'utf8'),
        new RegExp(
          `--addresses=127\\.0\\.0\\.1:${ports[0]},127\\.0\\.0\\.1:${ports[1]},127\\.0\\.0\\.1:${ports[2]}`,
        ),
      );
      assert.ok(
        repl(clusterId, addresses, 'create_accounts id=99 code=1 ledger=1')?.includes('created'),
        'the cluster answers',
      );

      // 2. A data file exists: init leaves it alone, even with formatting allowed.
      const before = statSync(file(1));
      const again = init(1, true);
      assert.equal(again.status, 0, again.stderr);
      assert.match(again.stderr, /exists; starting it/);
      assert.equal(statSync(file(1)).mtimeMs, before.mtimeMs);
      assert.equal(statSync(file(1)).ino, before.ino);

      // 3. Replica 2 loses its volume while the others run: recovered, not formatted, even
      //    though formatting is allowed; it then serves (replica 0 stopped: 1 and 2 are the
      // quorum).
      await stopBackground(replicas[2]!);
      rmSync(file(2));
      const recovered = init(2, true);
      assert.equal(recovered.status, 0, recovered.stderr);
      assert.match(recovered.stderr, /recovering/);
      assert.doesNotMatch(recovered.stderr, /formatting/);
      replicas[2] = start(2);
      await waitForPorts([ports[2]!], replicas);
      await stopBackground(replicas[0]!);
      assert.match(
        repl(clusterId, addresses, 'lookup_accounts id=99') ?? '',
        /"id": "99"/,
        'the recovered replica is part of the quorum',
      );

      // 4. No cluster answers and formatting is not allowed: refuse, write nothing.
      await Promise.all(replicas.map((r) => (r === undefined ? undefined : stopBackground(r))));
      rmSync(file(0));
      const refused = init(0, false);
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /the cluster did not answer/);
      assert.deepEqual(readdirSync(join(dir, '0')), []);

      // 5. A data file of another cluster id on the volume: refuse whatever the switch says.
      writeFileSync(join(dir, '0', `1_0.tigerbeetle`), '');
      const foreign = init(0, true);
      assert.notEqual(foreign.status, 0);
      assert.match(foreign.stderr, /refusing to format or recover/);
      assert.deepEqual(readdirSync(join(dir, '0')), ['1_0.tigerbeetle']);
    } finally {
      await Promise.all(replicas.map((r) => (r === undefined ? undefined : stopBackground(r))));
    }
  });
});

describe('Dockerfile', () => {
  const { instructions, stages } = readDockerfile(ROOT);

  test('two stages on one pinned Node 20 slim image; runtime: /opt/app as dist/, production deps, non-root, HOST, HEALTHCHECK, CMD', () => {
    assert.equal(stages.length, 2);
    const images = stages.map((s) => s[0]!.split(/\s+/)[1]!);
    for (const image of images)
      assert.match(image, /^node:20\.\d+\.\d+-bookworm-slim$/, 'pinned to a release');
    assert.equal(images[0], images[1]);
    const [build, runtime] = stages as [string[], string[]];
    assert.ok(build.some((l) => /^RUN npm ci\b/.test(l) && !l.includes('--omit=dev')));
    assert.ok(build.includes('RUN npm run build'));
    assert.ok(runtime.some((l) => /^RUN npm ci --omit=dev\b/.test(l)));
    // The runtime stage is `npm run build`'s dist/, entry for entry, in central-ledger's /opt/app.
    assert.equal(stageWorkdir(runtime), '/opt/app');
    const dist = `${stageWorkdir(build)}/dist/`;
    const copied = runtime
      .filter((l) => l.startsWith('COPY '))
      .flatMap((l) => {
        const [flag, ...paths] = l.split(/\s+/).slice(1);
        assert.equal(flag, '--from=build', `${l}: only the build stage's output`);
        const target = paths.pop()!;
        return paths.map((source) => {
          assert.ok(source.startsWith(dist), `${l}: copies from ${dist}`);
          const entry = source.slice(dist.length);
          assert.ok(
            target === './' || target === `./${entry}`,
            `${l}: dist/${entry} lands at /opt/app/${entry}`,
          );
          return entry;
        });
      });
    assert.deepEqual(copied.sort(), ['config', 'package-lock.json', 'package.json', 'src']);
    const env = stageEnvironment(runtime);
    assert.equal(env['HOST'], '0.0.0.0');
    assert.ok(!('PORT' in env), "no PORT: ours would override central-settlement's 3007");
    const user = runtime.find((l) => l.startsWith('USER '))!.split(/\s+/)[1]!;
    assert.match(
      user,
      /^[1-9]\d*(:\d+)?$/,
      'a numeric non-root user (Kubernetes runAsNonRoot can check it)',
    );
    // DATA_DIR, the one directory the service writes, is the user's.
    assert.equal(env['DATA_DIR'], '/opt/app/data');
    assert.ok(runtime.some((l) => l.startsWith('RUN ') && l.includes(`chown ${user} data`)));
    // The default command is our own entry point, the root's `npm start` from dist/.
    assert.deepEqual(stageCommand(runtime), ['node', 'src/main.js']);
    assert.equal(PACKAGE.main, 'dist/src/main.js');
    assert.equal(`dist/${stageCommand(runtime)[1]}`, PACKAGE.main);
    assert.ok(runtime.some((l) => l.startsWith('HEALTHCHECK ')));
  });

  test('the HEALTHCHECK command: 0 when /health is 200, 1 when it is not or nothing listens', async () => {
    const line = instructions.find((l) => l.startsWith('HEALTHCHECK '))!;
    const command = JSON.parse(line.slice(line.indexOf('CMD ') + 4)) as string[];
    assert.deepEqual(command.slice(0, 2), ['node', '-e']);
    const [port] = await freePorts(1);
    let status = 200;
    const server: Server = createServer((request, response) => {
      response.statusCode = request.url === '/health' ? status : 404;
      response.end();
    });
    await new Promise<void>((done) => server.listen(port, '127.0.0.1', () => done()));
    const check = (): Promise<number | null> =>
      new Promise((done) => {
        const child = spawn(command[0]!, command.slice(1), {
          env: { ...process.env, PORT: String(port) },
          stdio: 'ignore',
        });
        child.once('exit', (code) => done(code));
      });
    try {
      assert.equal(await check(), 0);
      status = 502;
      assert.equal(await check(), 1);
    } finally {
      await new Promise<void>((done) => server.close(() => done()));
    }
    assert.equal(await check(), 1);
  });

  test('.dockerignore lets in exactly what the build copies; src needs only production dependencies', () => {
    const rules = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    assert.equal(rules[0], '*', 'an allow-list');
    const allowed = rules.slice(1).map((r) => r.replace(/^!/, '').replace(/\/$/, ''));
    const copied = stages[0]!
      .filter((l) => /^COPY /.test(l))
      .flatMap((l) => l.split(/\s+/).slice(1, -1));
    assert.deepEqual([...new Set(copied)].sort(), [...allowed].sort());
    // Every module src imports is in src, a Node builtin, or a production dependency:
    // `npm ci --omit=dev` and dist/src are then all the runtime stage needs.
    const builtins = new Set(builtinModules);
    const walk = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory()
          ? walk(join(dir, e.name))
          : e.name.endsWith('.ts')
            ? [join(dir, e.name)]
            : [],
      );
    for (const file of walk(join(ROOT, 'src'))) {
      const source = readFileSync(file, 'utf8');
      // `typeof import('x')` is a type, erased: not an import of the running code.
      for (const match of source.matchAll(
        /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+'([^']+)'|require\('([^']+)'\)|(?<!typeof )import\('([^']+)'\)/g,
      )) {
        const specifier = match[1] ?? match[2] ?? match[3]!;
        if (/^import\s+type\s/.test(match[0].trim())) continue;
        if (specifier.startsWith('.')) {
          const target = relative(join(ROOT, 'src'), resolve(dirname(file), specifier));
          assert.ok(
            !target.startsWith('..'),
            `${relative(ROOT, file)} imports ${specifier}, outside src/ (not in the image)`,
          );
          continue;
        }
        const pkg = specifier.startsWith('@')
          ? specifier.split('/').slice(0, 2).join('/')
          : specifier.split('/')[0]!;
        if (specifier.startsWith('node:') || builtins.has(pkg)) continue;
        assert.ok(
          pkg in PACKAGE.dependencies,
          `${relative(ROOT, file)} imports ${pkg}, which is not in package.json dependencies`,
        );
      }
    }
  });
});

describe('scripts/local-stack.sh', () => {
  test('sets what compose sets, except the addresses and the MySQL/Kafka switches it documents', () => {
    const script = readFileSync(join(ROOT, 'scripts', 'local-stack.sh'), 'utf8');
    const local = new Set([...script.matchAll(/^\s*default ([A-Z_]+) /gm)].map((m) => m[1]!));
    local.add('TB_CLUSTER_ID').add('TB_ADDRESSES'); // from tb-cluster.sh's output
    assertConfigNames(local, 'local-stack.sh');
    // The names compose's environment sets besides deploy/service.env are the ones this script
    // sets for itself (PORT is in both, so that the script can wait on it).
    const compose = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    const block = compose.slice(compose.indexOf('  central-ledger:'));
    const environment = block.slice(
      block.indexOf('    environment:'),
      block.indexOf('    # Published'),
    );
    const composeNames = new Set([...environment.matchAll(/^ {6}([A-Z_]+):/gm)].map((m) => m[1]!));
    for (const name of ['MYSQL_USER', 'MYSQL_PASSWORD', 'MYSQL_DATABASE']) composeNames.add(name); // <<: *mysql_credentials
    for (const name of composeNames) {
      assert.ok(
        local.has(name) || name === 'MYSQL_PASSWORD',
        `compose sets ${name}; local-stack.sh must too (or say why not)`,
      );
    }
    assert.match(script, /MYSQL_PASSWORD=\.\./, 'the script says how to give MySQL a password');
  });

  test('start runs the cluster and the service until /health is OK; stop stops both', async (t) => {
    if (tigerbeetle === undefined) return loudSkip(t, NO_TIGERBEETLE);
    const dir = tempDir('local-stack-');
    const [servicePort, ...tbPorts] = await freePorts(4);
    const env = {
      ...process.env,
      TIGERBEETLE_BIN: tigerbeetle,
      LOCAL_STACK_DIR: join(dir, 'stack'),
      TB_DATA_DIR: join(dir, 'tb'),
      TB_PORTS: tbPorts.join(','),
      PORT: String(servicePort),
      DATA_DIR: join(dir, 'data'),
      // tsx: this test checks the script, not the whole repository's type-check (npm test does).
      LOCAL_STACK_RUNNER: 'tsx',
      LOG_LEVEL: 'warn',
    };
    const script = join(ROOT, 'scripts', 'local-stack.sh');
    try {
      const started = run('bash', [script, 'start'], { env, timeoutMs: 120_000 });
      assert.equal(started.status, 0, started.stdout + started.stderr);
      assert.match(started.stdout, /service healthy/);
      const response = await fetch(`http://127.0.0.1:${servicePort}/health`);
      assert.equal(response.status, 200);
      const health = (await response.json()) as { services: { name: string; status: string }[] };
      assert.ok(
        health.services.some((s) => s.name === 'ledger:tigerbeetle' && s.status === 'OK'),
        JSON.stringify(health),
      );
      const again = run('bash', [script, 'start'], { env, timeoutMs: 60_000 });
      assert.equal(again.status, 0, again.stderr);
      assert.match(again.stdout, /service already running/);
    } finally {
      const stopped = run('bash', [script, 'stop'], { env, timeoutMs: 60_000 });
      assert.equal(stopped.status, 0, stopped.stderr);
    }
    assert.equal(await portOpen(servicePort!), false, 'the service is gone');
    for (const port of tbPorts) assert.equal(await portOpen(port), false, 'the replicas are gone');
  });
});
