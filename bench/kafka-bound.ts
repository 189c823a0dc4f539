/**
 * The machine's arithmetic behind bench/kafka.ts's comparison: what each process spends per
 * transfer on each path, the throughput the machine's cores allow at that cost, and where a
 * closed loop's time per transfer goes — so that a Kafka figure below HTTP's says whether the
 * cores (a physical limit of the machine) or the latency of the hops hold it back.
 */
import type { KafkaPhase } from './kafka-load';
import type { CpuUse, HttpPhase } from './phases';

/** CPU per transfer (ms) of each process on one path, and what the machine allows at that cost. */
export interface PathCost {
  service: number;
  broker: number;
  replicas: number;
  loadGenerator: number;
  /** The four above: what one transfer costs the machine on this path. */
  total: number;
  /** cores × 1000 ÷ total: transfers/s were the whole machine ours. */
  machineBound: number;
  /**
   * The same with the cores other processes and the hypervisor took during the phase subtracted.
   */
  availableCores: number;
  availableBound: number;
  /** Measured transfers/s ÷ availableBound: near 1, the phase ran out of cores. */
  boundUsed: number;
}

/**
 * `viaBroker`: whether the path crosses the broker (HTTP does not: the broker's idle CPU then
 * counts with the other processes).
 */
export function pathCost(
  cpu: CpuUse,
  transfers: number,
  transfersPerS: number,
  cores: number,
  viaBroker: boolean,
): PathCost {
  const ms = (used: number | undefined): number => ((used ?? 0) * cpu.wallS * 1000) / transfers;
  const service = ms(cpu.service);
  const broker = viaBroker ? ms(cpu.broker) : 0;
  const replicas = ms(cpu.tigerbeetle);
  const loadGenerator = ms(cpu.loadGenerator);
  const total = service + broker + replicas + loadGenerator;
  const availableCores = Math.max(
    0,
    cores - cpu.others - cpu.steal - (viaBroker ? 0 : (cpu.broker ?? 0)),
  );
  const availableBound = (availableCores * 1000) / total;
  return {
    service,
    broker,
    replicas,
    loadGenerator,
    total,
    machineBound: (cores * 1000) / total,
    availableCores,
    availableBound,
    boundUsed: transfersPerS / availableBound,
  };
}

/**
 * The report's lines: cost per transfer and bounds of both paths, and the Kafka loop's time per
 * transfer.
 */
export function boundLines(k: KafkaPhase, h: HttpPhase, inFlight: number, cores: number): string[] {
  if (k.cpu === undefined || h.cpu === undefined) return [];
  const kc = pathCost(k.cpu, k.committed, k.transfersPerS, cores, true);
  const hc = pathCost(h.cpu, h.transfers, h.transfersPerS, cores, false);
  const f = (n: number, digits = 3): string => n.toFixed(digits);
  const costLine = (name: string, c: PathCost, measured: number): string =>
    `${name}: service ${f(c.service)}${c.broker > 0 ? ` + broker ${f(c.broker)}` : ''} + replicas ${f(c.replicas)} + load generator ${f(c.loadGenerator)} = ${f(c.total)} ms CPU per transfer; ` +
    `machine bound ${cores} cores × 1000 ÷ ${f(c.total)} = ${f(c.machineBound, 0)} transfers/s; with the ${f(c.availableCores, 2)} cores others left: ${f(c.availableBound, 0)}/s; measured ${f(measured, 0)}/s = ${(c.boundUsed * 100).toFixed(0)} % of it`;
  const lines = [
    costLine('Machine bound, Kafka', kc, k.transfersPerS),
    costLine('Machine bound, HTTP', hc, h.transfersPerS),
  ];
  lines.push(
    `Kafka/HTTP CPU per transfer: service ${f(kc.service / hc.service, 2)}×, all processes on the path ${f(kc.total / hc.total, 2)}× (Kafka's broker alone ${f(kc.broker, 3)} ms against HTTP's whole path ${f(hc.total, 3)} ms); ` +
      `machine bound Kafka/HTTP ${f(kc.machineBound / hc.machineBound, 2)}×`,
  );
  if (inFlight > 0) {
    // Little's law for a closed loop: transfers/s = in flight ÷ time per transfer.
    const perTransfer = (inFlight / k.transfersPerS) * 1000;
    const httpPerTransfer = (inFlight / h.transfersPerS) * 1000;
    lines.push(
      `Kafka loop: ${inFlight} in flight ÷ ${f(k.transfersPerS, 0)}/s = ${f(perTransfer, 1)} ms per transfer (mean measured ${f(k.latency.complete.mean, 1)} ms): prepare → forward mean ${f(k.latency.forward.mean, 1)} ms, forward → commit mean ${f(k.latency.fulfilToCommit.mean, 1)} ms, ` +
        `each two broker crossings and a service cycle (fetch, ledger, produce), ~${f(k.latency.complete.mean / 4, 1)} ms per crossing; HTTP: ${inFlight} ÷ ${f(h.transfersPerS, 0)}/s = ${f(httpPerTransfer, 1)} ms per transfer (two requests)`,
    );
  }
  return lines;
}
