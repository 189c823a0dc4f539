/**
 * The method of the pure-CPU benchmarks (crc32c-cost, digest-cost, produce-encoding-cost): each
 * arm timed in turn, round after round in one process, so that a busy moment of the machine falls
 * on every arm alike; the first round of each is a warm-up.
 */

/** CPU ns per unit of `units` runs of `work` (awaited when it answers a promise). */
export async function cpuNsPerUnit(
  units: number,
  work: (unit: number) => unknown,
): Promise<number> {
  const start = process.cpuUsage();
  for (let unit = 0; unit < units; unit++) {
    const done = work(unit);
    if (done instanceof Promise) await done;
  }
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / units;
}

/** Each arm's figure per round after the warm-up, `measure` called for the arms in turn. */
export async function alternate<Arm>(
  arms: readonly Arm[],
  rounds: number,
  measure: (arm: Arm) => Promise<number>,
): Promise<Map<Arm, number[]>> {
  const figures = new Map<Arm, number[]>(arms.map((arm) => [arm, []]));
  for (let round = 0; round <= rounds; round++)
    for (const arm of arms) {
      const figure = await measure(arm);
      if (round > 0) figures.get(arm)!.push(figure);
    }
  return figures;
}

export function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}
