/**
 * Generates the JMeter plan's data set:
 *
 *   npx tsx jmeter/generator/cli.ts --config jmeter/config/default.json --seed 42 --out
 * jmeter/data/default
 *
 * The same config and seed write the same bytes. A seed also names the participants and
 * transfers, so each run against a ledger that keeps its state needs a seed not used against it
 * before (jmeter/run.sh picks a fresh one unless SEED is set).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { GeneratorConfigError, parseConfig } from './config';
import { planData } from './generate';
import { writeData } from './output';

const USAGE =
  'usage: tsx jmeter/generator/cli.ts --config <config.json> --seed <seed> --out <directory>';

export function main(argv: string[]): number {
  let values: { config?: string; seed?: string; out?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string' },
        seed: { type: 'string' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (
    values.config === undefined ||
    values.seed === undefined ||
    values.out === undefined ||
    values.seed === ''
  ) {
    process.stderr.write(`--config, --seed and --out are required\n${USAGE}\n`);
    return 2;
  }
  try {
    const config = parseConfig(JSON.parse(readFileSync(values.config, 'utf8')));
    const manifest = writeData(planData(config, values.seed), values.out);
    const t = manifest.transfers;
    process.stdout.write(
      `wrote ${values.out}: ${manifest.participants.length} participants, ${t.commit + t.reject + t.over_liquidity} transfers ` +
        `(${t.commit} committed, ${t.reject} rejected, ${t.over_liquidity} over liquidity), ` +
        `${manifest.actionTypes.transfer_lookup} transfer lookups, ${manifest.actionTypes.account_lookup} account lookups: ${manifest.samples} requests\n`,
    );
    return 0;
  } catch (error) {
    if (
      error instanceof GeneratorConfigError ||
      error instanceof SyntaxError ||
      (error as NodeJS.ErrnoException).code === 'ENOENT'
    ) {
      process.stderr.write(`${values.config}: ${(error as Error).message}\n`);
      return 1;
    }
    throw error;
  }
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
