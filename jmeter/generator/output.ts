/**
 * Writes a data set: data.json (every item, one per line inside a JSON array), one TSV per thread
 * group, and manifest.json (the config that took effect and how many samples each file makes,
 * which the smoke test and run.sh compare with JMeter's results).
 */
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { formatAmount } from '../../src/domain/shared/money';
import type { GeneratorConfig } from './config';
import { ACTION_TYPES, dataItems, type ActionType, type DataPlan } from './generate';
import { renderRow, tableHeader, tableRows, TABLES, type TableName } from './tables';

export const DATA_FILE = 'data.json';
export const MANIFEST_FILE = 'manifest.json';

export interface Manifest {
  generator: string;
  seed: string;
  config: Record<string, unknown>;
  runTag: string;
  participants: string[];
  transfers: { commit: number; reject: number; over_liquidity: number };
  actionTypes: Record<ActionType, number>;
  /** Per TSV file: rows, and the samples (HTTP requests) JMeter makes from them. */
  tables: Record<string, { threadGroup: string; rows: number; samples: number }>;
  /** Every sample the plan makes when it uses up all its data. */
  samples: number;
}

/** The config as it took effect, defaults included, in the 2022 key names. */
export function effectiveConfig(config: GeneratorConfig): Record<string, unknown> {
  return {
    'participant-accounts': config.participantAccounts,
    'account-lookups': config.accountLookups,
    transfers: config.transfers,
    rejections: config.rejections,
    'transfer-lookups': config.transferLookups,
    'transfers-single-http-request': config.singleHttpRequest,
    'transfers-amount-max': formatAmount(config.amountMax, config.currency),
    'transfers-currency': config.currency.code,
    'transfers-over-liquidity': config.overLiquidity,
    'participant-liquidity': formatAmount(config.liquidity, config.currency),
    'transfers-expiration': config.expiration,
  };
}

export function manifestOf(plan: DataPlan): Manifest {
  const single = plan.config.singleHttpRequest;
  const actionTypes = Object.fromEntries(ACTION_TYPES.map((a) => [a, 0])) as Record<
    ActionType,
    number
  >;
  const transfers = { commit: 0, reject: 0, over_liquidity: 0 };
  const samples = { transfers: 0, rejections: 0 };
  // Counted from the plan rather than by rendering every item again (the tests check they agree).
  for (const t of plan.transfers) {
    transfers[t.kind]++;
    const types: ActionType[] = single
      ? [t.kind === 'reject' ? 'transfer_reject' : 'transfer_prepare_fulfil']
      : t.kind === 'over_liquidity'
        ? ['transfer_prepare']
        : ['transfer_prepare', t.kind === 'commit' ? 'transfer_fulfil' : 'transfer_reject'];
    for (const type of types) actionTypes[type]++;
    samples[t.kind === 'commit' ? 'transfers' : 'rejections'] += types.length;
  }
  actionTypes.create_participant = plan.participants.length;
  actionTypes.transfer_lookup = plan.transferLookups.length;
  actionTypes.account_lookup = plan.accountLookups.length;
  const rows: Record<TableName, [number, number]> = {
    participants: [plan.participants.length, plan.participants.length],
    transfers: [transfers.commit, samples.transfers],
    rejections: [transfers.reject + transfers.over_liquidity, samples.rejections],
    'transfer-lookups': [plan.transferLookups.length, plan.transferLookups.length],
    'account-lookups': [plan.accountLookups.length, plan.accountLookups.length],
  };
  const tables: Manifest['tables'] = {};
  for (const table of TABLES)
    tables[table.file] = {
      threadGroup: table.threadGroup,
      rows: rows[table.name][0],
      samples: rows[table.name][1],
    };
  return {
    generator: 'tb-central-ledger jmeter/generator 1',
    seed: plan.seed,
    config: effectiveConfig(plan.config),
    runTag: plan.runTag,
    participants: plan.participants,
    transfers,
    actionTypes,
    tables,
    samples: Object.values(tables).reduce((sum, t) => sum + t.samples, 0),
  };
}

/** Buffered writes to one file, so a million rows do not become a million system calls. */
class FileWriter {
  private readonly fd: number;
  private chunks: string[] = [];
  private size = 0;

  constructor(path: string) {
    this.fd = openSync(path, 'w');
  }

  write(text: string): void {
    this.chunks.push(text);
    this.size += text.length;
    if (this.size >= 1 << 20) this.flush();
  }

  close(): void {
    this.flush();
    closeSync(this.fd);
  }

  private flush(): void {
    if (this.chunks.length > 0) writeSync(this.fd, this.chunks.join(''));
    this.chunks = [];
    this.size = 0;
  }
}

export function writeData(plan: DataPlan, outDir: string): Manifest {
  mkdirSync(outDir, { recursive: true });
  const json = new FileWriter(join(outDir, DATA_FILE));
  json.write('[');
  let first = true;
  for (const item of dataItems(plan)) {
    json.write(`${first ? '\n' : ',\n'}${JSON.stringify(item)}`);
    first = false;
  }
  json.write(first ? ']\n' : '\n]\n');
  json.close();

  for (const table of TABLES) {
    const tsv = new FileWriter(join(outDir, table.file));
    tsv.write(renderRow(tableHeader(table.name)));
    for (const row of tableRows(plan, table.name)) tsv.write(renderRow(row));
    tsv.close();
  }
  const manifest = manifestOf(plan);
  writeFileSync(join(outDir, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + '\n');
  return manifest;
}
