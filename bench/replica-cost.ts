/**
 * The TigerBeetle replicas' CPU against the shape of the ledger requests, from one run's phases:
 * per ledger request and per command, a straight-line fit of it (≈ a + b·n ms for a request of n
 * commands), and what that fit leaves per transfer at the fullest requests a concurrency allows
 * (each connection has at most one command outstanding, so c connections put at most c commands
 * in a request). Beside it the replicas' idle burn measured in the same run, as a share of each
 * phase's transfers. bench/README.md ("Replica CPU per transfer: idle burn and the floor").
 */
import type { PhaseReport } from './report';
import { table } from './report';

/** The issue's target for the replicas' CPU per complete transfer at 64 connections (ms). */
export const REPLICA_TARGET_MS = 0.15;

interface RequestCost {
  phase: PhaseReport;
  commandsPerRequest: number;
  commandsPerTransfer: number;
  replicaMsPerRequest: number;
}

function requestCosts(phases: readonly PhaseReport[]): RequestCost[] {
  return phases.flatMap((p) => {
    const c = p.cpuPerTransfer;
    if (
      p.load.target !== 'service' ||
      p.batch === undefined ||
      c === undefined ||
      p.load.transfers === 0 ||
      p.batch.batches === 0
    )
      return [];
    return [
      {
        phase: p,
        commandsPerRequest: p.batch.mean,
        commandsPerTransfer: (p.batch.mean * p.batch.batches) / p.load.transfers,
        replicaMsPerRequest: (c.tigerbeetleMs * p.load.transfers) / p.batch.batches,
      },
    ];
  });
}

/** Least squares y ≈ a + b·x; undefined with fewer than two distinct x. */
export function lineFit(
  points: readonly { x: number; y: number }[],
): { a: number; b: number } | undefined {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  if (n < 2 || sxx < 1e-9) return undefined;
  const b = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0) / sxx;
  return { a: my - b * mx, b };
}

/**
 * The table and the arithmetic. `idleReplicaCores`: the replicas' CPU seconds per wall second with
 * the service connected and no load, measured in the same run.
 */
export function replicaCostText(
  phases: readonly PhaseReport[],
  idleReplicaCores: number | undefined,
): string {
  const costs = requestCosts(phases);
  if (costs.length === 0) return '';
  const idleMs = (p: PhaseReport): number | undefined =>
    idleReplicaCores === undefined ? undefined : (idleReplicaCores * 1000) / p.transfersPerS;
  const rows = costs.map(
    ({ phase: p, commandsPerRequest, commandsPerTransfer, replicaMsPerRequest }) => {
      const measured = p.cpuPerTransfer!.tigerbeetleMs;
      const idle = idleMs(p);
      return [
        p.load.scenario,
        String(p.load.connections),
        p.transfersPerS.toFixed(0),
        commandsPerRequest.toFixed(1),
        commandsPerTransfer.toFixed(2),
        replicaMsPerRequest.toFixed(2),
        (replicaMsPerRequest / commandsPerRequest).toFixed(3),
        measured.toFixed(3),
        idle === undefined ? 'n/a' : idle.toFixed(3),
        idle === undefined ? 'n/a' : (measured - idle).toFixed(3),
      ];
    },
  );
  const lines = [
    `TigerBeetle replicas' CPU against the ledger requests (replicas' CPU in the phase ÷ its ledger requests; "idle share" = the idle burn measured in this run${idleReplicaCores === undefined ? ' (not measured)' : `, ${idleReplicaCores.toFixed(3)} cores,`} ÷ the phase's transfers/s; "with work" = measured − idle share, the part that scales with work — the measured figure is the one to compare):`,
    table(
      [
        'scenario',
        'conc',
        'transfers/s',
        'commands/request',
        'commands/transfer',
        'replicas ms/request',
        'replicas ms/command',
        'replicas ms/transfer (measured)',
        'idle share ms/transfer',
        'with work ms/transfer',
      ],
      rows,
    ),
  ];
  for (const scenario of ['fspiop', 'jmeter'] as const) {
    const of = costs.filter((c) => c.phase.load.scenario === scenario);
    const fit = lineFit(of.map((c) => ({ x: c.commandsPerRequest, y: c.replicaMsPerRequest })));
    if (fit === undefined || of.length < 2) continue;
    const k = of.reduce((s, c) => s + c.commandsPerTransfer, 0) / of.length;
    const floorAt = (n: number): number => k * (fit.a / n + fit.b);
    const levels = [...new Set(of.map((c) => c.phase.load.connections))].sort((x, y) => x - y);
    lines.push(
      `${scenario}: replicas ms per request ≈ ${fit.a.toFixed(2)} + ${fit.b.toFixed(3)}·n at n commands (least squares over ${of.length} phases, n ${Math.min(...of.map((c) => c.commandsPerRequest)).toFixed(1)}–${Math.max(...of.map((c) => c.commandsPerRequest)).toFixed(1)}); ` +
        `at ${k.toFixed(2)} commands per transfer a transfer costs ${k.toFixed(2)} × (${fit.a.toFixed(2)}/n + ${fit.b.toFixed(3)}) ms, and c connections fill a request with at most c commands: ` +
        levels.map((c) => `c=${c} ≥ ${floorAt(c).toFixed(3)}`).join(', ') +
        `; no batching goes below ${k.toFixed(2)} × ${fit.b.toFixed(3)} = ${(k * fit.b).toFixed(3)} ms (target at 64: ≤ ${REPLICA_TARGET_MS}).`,
    );
  }
  return lines.join('\n');
}
