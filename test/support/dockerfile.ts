/**
 * The repository's Dockerfile read as instructions, for the tests that check it without a
 * container engine (test/deployment.test.ts) and run its runtime stage's layout by hand
 * (test/image-layout.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Dockerfile {
  /** Instructions with continuation lines joined, comments dropped. */
  instructions: string[];
  /** The instructions of each stage, its FROM first. */
  stages: string[][];
}

export function readDockerfile(root: string): Dockerfile {
  const instructions = readFileSync(join(root, 'Dockerfile'), 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages = instructions.reduce<string[][]>((acc, line) => {
    if (/^FROM /i.test(line)) acc.push([]);
    acc.at(-1)?.push(line);
    return acc;
  }, []);
  return { instructions, stages };
}

/** The variables a stage's `ENV NAME=value ...` instructions set (values without spaces). */
export function stageEnvironment(stage: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of stage.filter((l) => l.startsWith('ENV '))) {
    for (const pair of line.slice(4).trim().split(/\s+/)) {
      const eq = pair.indexOf('=');
      if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}

/** The exec-form argument list of a stage's `CMD [...]`. */
export function stageCommand(stage: string[]): string[] {
  const cmd = stage.find((l) => l.startsWith('CMD '));
  if (cmd === undefined) throw new Error('the stage has no CMD');
  return JSON.parse(cmd.slice(4)) as string[];
}

/** The stage's WORKDIR (the last one). */
export function stageWorkdir(stage: string[]): string {
  const workdir = stage.filter((l) => l.startsWith('WORKDIR ')).at(-1);
  if (workdir === undefined) throw new Error('the stage has no WORKDIR');
  return workdir.slice('WORKDIR '.length).trim();
}
