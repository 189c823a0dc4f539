// Test harness: runs a throwaway single-node Apache Kafka broker (KRaft, broker and
// controller in one JVM) on 127.0.0.1 with free ports and a temp data dir, and tears it
// down again. The jars come from Maven Central through kafka/pom.xml into kafka/libs/
// (git-ignored); the first start downloads them (~45 MB).
//
//   const why = kafkaAvailable();               // a reason => skip the test, loudly
//   const kafka = await startKafka();           // ready for kafkajs clients
//   new Kafka({ brokers: kafka.brokers })
//   await kafka.kill(); await kafka.restart();  // SIGKILL, then the same broker on its data
//   await kafka.stop();
import { ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { freePorts } from './net';
import { liveDirs, stopChild, track } from './leftovers';

const execFileAsync = promisify(execFile);

const REPO_ROOT = path.resolve(__dirname, '..', '..');
const KAFKA_DIR = path.join(REPO_ROOT, 'kafka');
const POM = path.join(KAFKA_DIR, 'pom.xml');
const LIBS_DIR = path.join(KAFKA_DIR, 'libs');
const LOG4J2_CONFIG = path.join(KAFKA_DIR, 'log4j2.properties');

// A cold ~/.m2 took ~36 s here (45 MB plus Maven's own plugins); warm ~4 s.
const DOWNLOAD_TIMEOUT_MS = 5 * 60_000;
const STORAGE_TOOL_TIMEOUT_MS = 60_000;
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 10_000;

export interface RunningKafka {
  /** host:port of the PLAINTEXT listener, for kafkajs `brokers`. */
  brokers: string[];
  stop(): Promise<void>;
  /** SIGKILL: the broker goes away at once; its data and ports stay for restart(). */
  kill(): Promise<void>;
  /** The same broker again (same ports, same data), resolving once it is ready. */
  restart(): Promise<void>;
}

/**
 * Why no broker can be started here (missing java, or mvn while kafka/libs/ is empty), else
 * undefined.
 */
export function kafkaAvailable(): string | undefined {
  if (javaBinary() === undefined) return 'no `java` (JDK/JRE 17+) on PATH or in $JAVA_HOME/bin';
  if (!jarsPresent() && findOnPath('mvn') === undefined) {
    return `no \`mvn\` on PATH to download the Kafka jars into ${path.relative(REPO_ROOT, LIBS_DIR)}/`;
  }
  return undefined;
}

function javaBinary(): string | undefined {
  const javaHome = process.env['JAVA_HOME'];
  if (javaHome) {
    const candidate = path.join(javaHome, 'bin', 'java');
    if (isExecutableFile(candidate)) return candidate;
  }
  return findOnPath('java');
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

function isExecutableFile(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

// The Kafka version the pom asks for, so that a version bump in the pom replaces stale jars.
function pomKafkaVersion(): string {
  const match = /<kafka\.version>\s*([^<\s]+)\s*<\/kafka\.version>/.exec(
    fs.readFileSync(POM, 'utf8'),
  );
  if (!match?.[1]) throw new Error(`${POM}: no <kafka.version> property`);
  return match[1];
}

function jarsPresent(): boolean {
  try {
    return fs.existsSync(path.join(LIBS_DIR, `kafka_2.13-${pomKafkaVersion()}.jar`));
  } catch {
    return false;
  }
}

let jarsReady: Promise<void> | undefined;

/**
 * Makes sure kafka/libs/ holds the broker's runtime jars, running
 *   mvn -B -q -f kafka/pom.xml dependency:copy-dependencies -DoutputDirectory=<dir>
 * -DincludeScope=runtime when it does not. Maven writes into a private directory inside kafka/libs/
 * whose jars are then moved up, so an interrupted download never leaves a half-filled kafka/libs/
 * that looks complete.
 */
export function ensureKafkaJars(): Promise<void> {
  jarsReady ??= downloadJarsIfMissing().catch((error: unknown) => {
    jarsReady = undefined; // let a later call try again
    throw error;
  });
  return jarsReady;
}

async function downloadJarsIfMissing(): Promise<void> {
  if (jarsPresent()) return;
  const mvn = findOnPath('mvn');
  if (mvn === undefined)
    throw new Error('Kafka jars missing and no `mvn` on PATH to download them');
  await fs.promises.mkdir(LIBS_DIR, { recursive: true });
  const staging = path.join(LIBS_DIR, `.download-${process.pid}-${randomBytes(4).toString('hex')}`);
  const started = Date.now();
  try {
    try {
      await execFileAsync(
        mvn,
        [
          '-B',
          '-q',
          '-f',
          POM,
          'dependency:copy-dependencies',
          `-DoutputDirectory=${staging}`,
          '-DincludeScope=runtime',
        ],
        {
          cwd: REPO_ROOT,
          timeout: DOWNLOAD_TIMEOUT_MS,
          killSignal: 'SIGKILL',
          maxBuffer: 16 * 1024 * 1024,
        },
      );
    } catch (error) {
      const e = error as { killed?: boolean; stdout?: string; stderr?: string; message: string };
      const why = e.killed ? `timed out after ${DOWNLOAD_TIMEOUT_MS} ms` : e.message;
      throw new Error(
        `downloading the Kafka jars with Maven failed: ${why}\n${tail(`${e.stdout ?? ''}${e.stderr ?? ''}`, 30)}`,
      );
    }
    const jars = (await fs.promises.readdir(staging)).filter((name) => name.endsWith('.jar'));
    if (!jars.some((name) => name.startsWith('kafka_2.13-'))) {
      throw new Error(`Maven ran but ${staging} holds no kafka_2.13 jar`);
    }
    // Another test process may have finished the same download meanwhile: keep its jars.
    if (jarsPresent()) return;
    // Jars of another Kafka version (the pom was bumped) would shadow the new ones on the class
    // path.
    for (const name of await fs.promises.readdir(LIBS_DIR)) {
      if (name.endsWith('.jar')) await fs.promises.rm(path.join(LIBS_DIR, name), { force: true });
    }
    // kafka_2.13 last: it is what jarsPresent() looks for.
    jars.sort((a, b) => Number(a.startsWith('kafka_2.13-')) - Number(b.startsWith('kafka_2.13-')));
    for (const name of jars)
      await fs.promises.rename(path.join(staging, name), path.join(LIBS_DIR, name));
    process.stderr.write(
      `[kafka-broker] downloaded ${jars.length} Kafka jars into ${LIBS_DIR} in ${Date.now() - started} ms\n`,
    );
  } finally {
    await fs.promises.rm(staging, { recursive: true, force: true });
  }
}

/** A notification as a test collects it: its Kafka key and its parsed envelope. */
export interface SeenNotification {
  key: string | null;
  value: any;
}

/**
 * The topics ml-api-adapter writes and the notification topic, `partitions` each; a producer to
 * feed them, and a collector (a group of its own, from the beginning) pushing every notification
 * into `seen`. Disconnect both before stopping the broker.
 */
export async function feedAndCollect(
  broker: RunningKafka,
  partitions: number,
  seen: SeenNotification[],
): Promise<{ producer: Producer; collector: Consumer }> {
  const kafka = new Kafka({
    clientId: 'test',
    brokers: broker.brokers,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      'topic-transfer-prepare',
      'topic-transfer-fulfil',
      'topic-transfer-get',
      'topic-notification-event',
    ].map((topic) => ({ topic, numPartitions: partitions })),
  });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const collector = kafka.consumer({ groupId: `collector-${randomBytes(4).toString('hex')}` });
  await collector.connect();
  await collector.subscribe({ topic: 'topic-notification-event', fromBeginning: true });
  await collector.run({
    eachMessage: async ({ message }) =>
      void seen.push({
        key: message.key?.toString() ?? null,
        value: JSON.parse(message.value!.toString()),
      }),
  });
  return { producer, collector };
}

/** Starts tried when the broker finds a port taken between freePorts() and its bind. */
const START_ATTEMPTS = 3;

export async function startKafka(): Promise<RunningKafka> {
  const why = kafkaAvailable();
  if (why !== undefined) throw new Error(`cannot start Kafka: ${why}`);
  await ensureKafkaJars();
  for (let attempt = 1; ; attempt++) {
    try {
      return await startKafkaOnce(javaBinary() as string);
    } catch (error) {
      if (
        attempt >= START_ATTEMPTS ||
        !String((error as Error).message).includes('Address already in use')
      )
        throw error;
    }
  }
}

async function startKafkaOnce(java: string): Promise<RunningKafka> {
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'kafka-test-'));
  liveDirs.add(dir);
  let child: ChildProcess | undefined;
  const logFile = path.join(dir, 'broker.log');

  const stop = async (): Promise<void> => {
    if (child) await stopChild(child, STOP_GRACE_MS);
    await fs.promises.rm(dir, { recursive: true, force: true });
    liveDirs.delete(dir);
  };

  try {
    const [port, controllerPort] = (await freePorts(2)) as [number, number];
    const propertiesFile = path.join(dir, 'server.properties');
    await fs.promises.writeFile(
      propertiesFile,
      serverProperties(port, controllerPort, path.join(dir, 'data')),
    );

    const classPath = `${LIBS_DIR}${path.sep}*`; // expanded by the JVM, not a shell
    // A short-lived JVM: C1 only and the serial collector start it faster.
    const storageTool = (args: string[]): Promise<{ stdout: string }> =>
      execFileAsync(
        java,
        [
          '-XX:TieredStopAtLevel=1',
          '-XX:+UseSerialGC',
          '-cp',
          classPath,
          `-Dlog4j2.configurationFile=${LOG4J2_CONFIG}`,
          'kafka.tools.StorageTool',
          ...args,
        ],
        {
          cwd: dir,
          timeout: STORAGE_TOOL_TIMEOUT_MS,
          killSignal: 'SIGKILL',
        },
      ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(
          `kafka.tools.StorageTool ${args[0]} failed: ${error.message}\n${tail(`${error.stdout ?? ''}${error.stderr ?? ''}`, 30)}`,
        );
      });
    // What `kafka.tools.StorageTool random-uuid` prints, made here: that JVM costs ~2 s of CPU.
    const clusterId = kafkaRandomUuid();
    await storageTool(['format', '-t', clusterId, '-c', propertiesFile]);

    const brokers = [`127.0.0.1:${port}`];
    const launch = async (): Promise<void> => {
      const fd = fs.openSync(logFile, 'a');
      try {
        child = spawn(
          java,
          [
            '-Xmx512m',
            `-Dlog4j2.configurationFile=${LOG4J2_CONFIG}`,
            '-cp',
            classPath,
            'kafka.Kafka',
            propertiesFile,
          ],
          { cwd: dir, stdio: ['ignore', fd, fd] },
        );
      } finally {
        fs.closeSync(fd); // the child holds its own copy of the descriptor
      }
      const started = track(child);
      // Unref'd: a test that forgets stop() still lets the process exit, and the 'exit'
      // handler then kills the broker. stop() re-refs while it waits.
      started.unref();
      await waitUntilReady(brokers, started, logFile);
    };
    const kill = async (): Promise<void> => {
      const running = child;
      if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
      running.ref();
      const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
      running.kill('SIGKILL');
      await exited;
    };
    await launch();
    return { brokers, stop, kill, restart: launch };
  } catch (error) {
    await stop();
    throw error;
  }
}

// Kafka's Uuid.randomUuid(): 16 random bytes as unpadded base64url, never starting with '-'
// (and never the reserved all-zero / 0…01 ids, which 122 random bits do not produce).
function kafkaRandomUuid(): string {
  for (;;) {
    const bytes = randomBytes(16);
    bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40; // as java.util.UUID.randomUUID(): version 4
    bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80; // IETF variant
    const id = bytes.toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

function serverProperties(port: number, controllerPort: number, logDir: string): string {
  return `${[
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${logDir}`,
    'num.partitions=1',
    'auto.create.topics.enable=true',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    'min.insync.replicas=1',
    'group.initial.rebalance.delay.ms=0',
  ].join('\n')}\n`;
}

// Ready means a real client gets metadata back (listTopics), not merely that the port is open.
async function waitUntilReady(
  brokers: string[],
  child: ChildProcess,
  logFile: string,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  let onExit: ((code: number | null, signal: NodeJS.Signals | null) => void) | undefined;
  let onError: ((error: Error) => void) | undefined;
  const failed = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new Error(`Kafka broker not ready after ${READY_TIMEOUT_MS} ms${logTail(logFile)}`)),
      READY_TIMEOUT_MS,
    );
    onExit = (code, signal) =>
      reject(
        new Error(`Kafka broker exited (${signal ?? code}) while starting${logTail(logFile)}`),
      );
    onError = (error) => reject(new Error(`Kafka broker failed to start: ${error.message}`));
    child.once('exit', onExit);
    child.once('error', onError);
  });
  const poll = async (): Promise<void> => {
    while (!settled) {
      const admin = new Kafka({
        clientId: 'kafka-broker-readiness',
        brokers,
        logLevel: logLevel.NOTHING,
        connectionTimeout: 1_000,
        retry: { retries: 0 },
      }).admin();
      try {
        await admin.connect();
        await admin.listTopics();
        // Also wait for the group coordinator (it needs __consumer_offsets, created on first
        // use): else every test's first consumer logs "The group coordinator is not available".
        await admin.describeGroups(['kafka-broker-readiness']);
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 100));
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    }
  };
  try {
    await Promise.race([poll(), failed]);
  } finally {
    settled = true;
    clearTimeout(timer);
    if (onExit) child.off('exit', onExit);
    if (onError) child.off('error', onError);
  }
}

function logTail(logFile: string): string {
  let text = '';
  try {
    text = fs.readFileSync(logFile, 'utf8');
  } catch {
    // no log yet
  }
  return `\n--- broker log (${logFile}) ---\n${tail(text, 30)}`;
}

function tail(text: string, lines: number): string {
  return text.split('\n').slice(-lines).join('\n');
}
