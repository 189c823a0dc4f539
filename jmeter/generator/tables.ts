/**
 * The tab-separated files the JMeter plan reads with CSV Data Set Config, one per thread group.
 *
 * Tab is the delimiter because compact JSON never contains one (JSON.stringify escapes control
 * characters inside strings and adds no whitespace), so bodies need no quoting; render refuses
 * any cell holding a tab or a line break rather than writing a row JMeter would misread.
 * The first line names the columns; JMeter takes its variable names from it.
 *
 * Every row is one or two steps (s1_*, s2_*): what to send and what to assert, as in DataItem.
 * Each step has CHECKS slots of (JSONPath, expected value); NONE means "absent" (the value the
 * plan's JSON Extractor gives a path that does not match), and unused slots check that
 * `$.__unused` is absent.
 */
import {
  accountLookupItem,
  participantItem,
  transferItems,
  transferLookupItem,
  type DataItem,
  type DataPlan,
  type PlannedTransfer,
} from './generate';

export const CHECKS = 5;
export const ABSENT = 'NONE';
const UNUSED_PATH = '$.__unused';

export type TableName =
  | 'participants'
  | 'transfers'
  | 'rejections'
  | 'transfer-lookups'
  | 'account-lookups';

/** The thread group each table feeds, in the order the plan runs them. */
export const TABLES: readonly {
  name: TableName;
  file: string;
  steps: 1 | 2;
  threadGroup: string;
}[] = [
  { name: 'participants', file: 'participants.tsv', steps: 1, threadGroup: 'setUp participants' },
  { name: 'transfers', file: 'transfers.tsv', steps: 2, threadGroup: 'transfers' },
  {
    name: 'rejections',
    file: 'rejections.tsv',
    steps: 2,
    threadGroup: 'rejections and expected failures',
  },
  {
    name: 'transfer-lookups',
    file: 'transfer-lookups.tsv',
    steps: 1,
    threadGroup: 'transfer lookups',
  },
  {
    name: 'account-lookups',
    file: 'account-lookups.tsv',
    steps: 1,
    threadGroup: 'account lookups',
  },
];

const STEP_FIELDS = ['label', 'method', 'path', 'body', 'source', 'destination', 'status'];

function stepHeader(step: number): string[] {
  const checks = Array.from({ length: CHECKS }, (_, i) => [
    `s${step}_check${i + 1}`,
    `s${step}_expect${i + 1}`,
  ]).flat();
  return [...STEP_FIELDS.map((f) => `s${step}_${f}`), ...checks];
}

export function tableHeader(name: TableName): string[] {
  const table = TABLES.find((t) => t.name === name)!;
  const key =
    name === 'participants' || name === 'account-lookups'
      ? ['name']
      : name === 'transfer-lookups'
        ? ['transferId']
        : ['transferId', 'kind'];
  return [...key, ...stepHeader(1), ...(table.steps === 2 ? stepHeader(2) : [])];
}

function stepCells(item: DataItem | undefined): string[] {
  if (item === undefined)
    return [...STEP_FIELDS.map(() => ''), ...Array.from({ length: CHECKS * 2 }, () => '')];
  const checks = Object.entries(item.response.fields);
  if (checks.length > CHECKS)
    throw new Error(
      `${item.actionType} asserts ${checks.length} fields, the plan has ${CHECKS} slots`,
    );
  while (checks.length < CHECKS) checks.push([UNUSED_PATH, null]);
  return [
    item.actionType,
    item.request.method,
    item.request.path,
    item.request.body === undefined ? '' : JSON.stringify(item.request.body),
    item.request.headers['fspiop-source'] ?? '',
    item.request.headers['fspiop-destination'] ?? '',
    String(item.response.status),
    ...checks.flatMap(([path, value]) => [path, value ?? ABSENT]),
  ];
}

function transferRow(plan: DataPlan, t: PlannedTransfer): string[] {
  const [first, second] = transferItems(plan, t);
  return [t.transferId, t.kind, ...stepCells(first), ...stepCells(second)];
}

/** The table's rows (without the header line). */
export function* tableRows(plan: DataPlan, name: TableName): Generator<string[]> {
  switch (name) {
    case 'participants':
      for (const p of plan.participants) yield [p, ...stepCells(participantItem(plan, p))];
      return;
    case 'transfers':
      for (const t of plan.transfers) if (t.kind === 'commit') yield transferRow(plan, t);
      return;
    case 'rejections':
      for (const t of plan.transfers) if (t.kind !== 'commit') yield transferRow(plan, t);
      return;
    case 'transfer-lookups':
      for (const lookup of plan.transferLookups)
        yield [
          plan.transfers[lookup.transfer]!.transferId,
          ...stepCells(transferLookupItem(plan, lookup)),
        ];
      return;
    case 'account-lookups':
      for (const p of plan.accountLookups)
        yield [plan.participants[p]!, ...stepCells(accountLookupItem(plan, p))];
      return;
  }
}

export function renderRow(cells: string[]): string {
  for (const cell of cells) {
    if (/[\t\r\n]/.test(cell))
      throw new Error(
        `a cell holds a tab or line break and cannot go in a TSV row: ${JSON.stringify(cell.slice(0, 80))}`,
      );
  }
  return cells.join('\t') + '\n';
}

/** Parses a table written by renderRow (tests and the smoke test read them back). */
export function parseTable(text: string): Record<string, string>[] {
  const [header, ...lines] = text.split('\n').filter((line) => line.length > 0);
  const names = header!.split('\t');
  return lines.map((line) => {
    const cells = line.split('\t');
    if (cells.length !== names.length)
      throw new Error(`row has ${cells.length} cells, header has ${names.length}`);
    return Object.fromEntries(names.map((n, i) => [n, cells[i]!]));
  });
}
