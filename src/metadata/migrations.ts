/**
 * Versioned schema migrations for the MySQL metadata store, in code so that the compiled
 * service carries them (knex's migration source API). Never edit a released migration: add one.
 * Money is not here: every balance and every transfer's money state lives in the ledger.
 */
import type { Knex } from 'knex';
import { mojaloopSchema } from './mojaloop-schema';
import { LockTimeoutError, type NamedLockPool } from './named-lock';

interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/** knex's record of applied migrations; knex locks migrating on `${MIGRATIONS_TABLE}_lock`. */
const MIGRATIONS_TABLE = 'knex_migrations';

const MIGRATIONS: Migration[] = [
  {
    name: '001_metadata',
    async up(knex) {
      await knex.schema.createTable('id_sequence', (t) => {
        t.increments('id').primary();
      });
      await knex.schema.createTable('hub_accounts', (t) => {
        t.integer('id').unsigned().primary();
        t.string('type', 32).notNullable();
        t.string('currency', 3).notNullable();
        t.string('created_date', 32).notNullable();
        t.unique(['type', 'currency']);
      });
      await knex.schema.createTable('settlement_models', (t) => {
        t.string('name', 50).primary();
        t.text('model').notNullable();
      });
      await knex.schema.createTable('participants', (t) => {
        t.string('name', 30).primary();
        t.integer('id').unsigned().notNullable().unique();
        t.boolean('is_active').notNullable();
        t.string('created', 32).notNullable();
        t.string('created_by', 64).notNullable();
      });
      await knex.schema.createTable('participant_currencies', (t) => {
        t.string('participant', 30).notNullable().references('participants.name');
        t.string('currency', 3).notNullable();
        t.integer('position_account_id').unsigned().notNullable();
        t.integer('settlement_account_id').unsigned().notNullable();
        t.boolean('position_account_active').notNullable();
        t.string('created_date', 32).notNullable();
        t.string('ndc_value', 40).nullable();
        t.integer('ndc_alarm_percentage').nullable();
        t.primary(['participant', 'currency']);
      });
      await knex.schema.createTable('participant_endpoints', (t) => {
        t.string('participant', 30).notNullable().references('participants.name');
        t.string('type', 64).notNullable();
        t.string('value', 512).notNullable();
        t.primary(['participant', 'type']);
      });
      await knex.schema.createTable('funds_records', (t) => {
        t.string('transfer_id', 36).primary();
        t.string('participant', 30).notNullable();
        t.string('currency', 3).notNullable();
        t.string('action', 40).notNullable();
        t.string('amount', 40).notNullable();
        t.string('state', 16).notNullable();
        t.string('payload_hash', 64).notNullable();
      });
      await knex.schema.createTable('transfers', (t) => {
        t.string('transfer_id', 36).primary();
        t.string('payer_fsp', 32).notNullable();
        t.string('payee_fsp', 32).notNullable();
        t.string('amount', 40).notNullable();
        t.string('currency', 3).notNullable();
        t.string('ilp_condition', 48).notNullable();
        t.text('ilp_packet', 'mediumtext').notNullable();
        t.string('expiration', 40).notNullable();
        t.text('extension_list').nullable();
        t.string('payload_hash', 64).notNullable();
        t.string('state', 24).notNullable();
        t.string('created_at', 32).notNullable();
        t.string('fulfilment', 48).nullable();
        t.string('completed_timestamp', 40).nullable();
        t.string('finish_hash', 80).nullable();
        t.text('error_information').nullable();
        t.index(['state']);
      });
    },
    async down(knex) {
      for (const table of [
        'transfers',
        'funds_records',
        'participant_endpoints',
        'participant_currencies',
        'participants',
        'settlement_models',
        'hub_accounts',
        'id_sequence',
      ]) {
        await knex.schema.dropTableIfExists(table);
      }
    },
  },
  {
    name: '002_message_origins',
    async up(knex) {
      await knex.schema.alterTable('transfers', (t) => {
        t.string('prepare_origin', 200).nullable();
        t.string('finish_origin', 200).nullable();
      });
    },
    async down(knex) {
      await knex.schema.alterTable('transfers', (t) => {
        t.dropColumn('prepare_origin');
        t.dropColumn('finish_origin');
      });
    },
  },
  {
    name: '003_funds_ledger_id',
    async up(knex) {
      await knex.schema.alterTable('funds_records', (t) => {
        t.string('ledger_id', 40).nullable();
      });
    },
    async down(knex) {
      await knex.schema.alterTable('funds_records', (t) => {
        t.dropColumn('ledger_id');
      });
    },
  },
  {
    name: '004_fx_transfers',
    async up(knex) {
      // An fxTransfer is read by its id or by the transfer it serves; the rest is one JSON
      // document.
      await knex.schema.createTable('fx_transfers', (t) => {
        t.string('commit_request_id', 36).primary();
        t.string('determining_transfer_id', 36).notNullable().index();
        t.string('state', 32).notNullable().index();
        t.text('record').notNullable();
      });
      await knex.schema.alterTable('transfers', (t) => {
        t.string('depends_on', 36).nullable();
      });
    },
    async down(knex) {
      await knex.schema.dropTableIfExists('fx_transfers');
      await knex.schema.alterTable('transfers', (t) => {
        t.dropColumn('depends_on');
      });
    },
  },
  {
    name: '005_participant_is_proxy',
    async up(knex) {
      await knex.schema.alterTable('participants', (t) => {
        t.boolean('is_proxy').notNullable().defaultTo(false);
      });
    },
    async down(knex) {
      await knex.schema.alterTable('participants', (t) => {
        t.dropColumn('is_proxy');
      });
    },
  },
  {
    // Settlement windows and settlements as documents (their nested content is read and written
    // whole);
    // `version` makes every save conditional, so two instances closing one window get one close.
    name: '006_settlement',
    async up(knex) {
      for (const table of ['settlement_windows', 'settlements']) {
        await knex.schema.createTable(table, (t) => {
          t.increments('id').primary();
          t.string('state', 32).notNullable().index();
          t.integer('version').notNullable();
          t.text('body', 'longtext').notNullable();
        });
      }
      const now = new Date().toISOString();
      await knex('settlement_windows').insert({
        id: 1,
        state: 'OPEN',
        version: 1,
        body: JSON.stringify({
          state: 'OPEN',
          reason: 'initial window',
          createdDate: now,
          changedDate: now,
          content: [],
        }),
      });
    },
    async down(knex) {
      await knex.schema.dropTableIfExists('settlements');
      await knex.schema.dropTableIfExists('settlement_windows');
    },
  },
  {
    // Several instances sweep the same open transfers: an expiry is told by the one instance
    // holding its claim (MySqlMetadataStore.claimExpiries); a claim lapses if its holder dies.
    name: '007_expiry_claims',
    async up(knex) {
      await knex.schema.createTable('expiry_claims', (t) => {
        t.string('transfer_id', 36).primary();
        t.string('owner', 36).notNullable();
        t.bigInteger('until_ms').notNullable();
      });
    },
    async down(knex) {
      await knex.schema.dropTableIfExists('expiry_claims');
    },
  },
  {
    // The same for FX conversions (by commitRequestId): a table of their own, since a conversion's
    // id and a transfer's are drawn independently and may be equal.
    name: '008_fx_expiry_claims',
    async up(knex) {
      await knex.schema.createTable('fx_expiry_claims', (t) => {
        t.string('commit_request_id', 36).primary();
        t.string('owner', 36).notNullable();
        t.bigInteger('until_ms').notNullable();
      });
    },
    async down(knex) {
      await knex.schema.dropTableIfExists('fx_expiry_claims');
    },
  },
  {
    // A reservation whose instance went away is taken over once overdue
    // (MySqlMetadataStore.overdue):
    // found by its expiration as a number, since the API's may carry any UTC offset and do not sort
    // as text.
    name: '009_expires_at',
    async up(knex) {
      for (const table of ['transfers', 'fx_transfers']) {
        await knex.schema.alterTable(table, (t) => {
          t.bigInteger('expires_at_ms').nullable();
          t.index(['state', 'expires_at_ms']);
        });
      }
      // Only rows still open are ever looked for by expiration.
      const transfers: { transfer_id: string; expiration: string }[] = await knex('transfers')
        .select('transfer_id', 'expiration')
        .whereIn('state', ['RECEIVED_PREPARE', 'RESERVED']);
      for (const row of transfers)
        await knex('transfers')
          .where({ transfer_id: row.transfer_id })
          .update({ expires_at_ms: Date.parse(row.expiration) });
      const conversions: { commit_request_id: string; record: string }[] = await knex(
        'fx_transfers',
      )
        .select('commit_request_id', 'record')
        .whereIn('state', ['RECEIVED_PREPARE', 'RESERVED', 'RECEIVED_FULFIL_DEPENDENT']);
      for (const row of conversions) {
        await knex('fx_transfers')
          .where({ commit_request_id: row.commit_request_id })
          .update({
            expires_at_ms: Date.parse(
              (JSON.parse(row.record) as { expiration: string }).expiration,
            ),
          });
      }
    },
    async down(knex) {
      for (const table of ['transfers', 'fx_transfers']) {
        await knex.schema.alterTable(table, (t) => {
          t.dropIndex(['state', 'expires_at_ms']);
          t.dropColumn('expires_at_ms');
        });
      }
    },
  },
  {
    // One conversion per determining transfer across instances: a prepare claims its transfer here
    // before the ledger (MySqlMetadataStore.claimDetermining). Not a unique index on fx_transfers,
    // whose upsert would then merge two conversions' rows into one. Every transfer a recorded
    // conversion names is held by one of them (a database may hold two for one transfer, both
    // accepted by instances before this claim: the one with the lowest id holds it).
    name: '010_fx_determining',
    async up(knex) {
      // CREATE TABLE commits at once: a backfill that failed (a lock wait behind older instances
      // still writing) must leave a migration that can run again.
      if (!(await knex.schema.hasTable('fx_determining'))) {
        await knex.schema.createTable('fx_determining', (t) => {
          t.string('determining_transfer_id', 36).primary();
          t.string('commit_request_id', 36).notNullable();
        });
      }
      await knex.raw(
        'INSERT IGNORE INTO fx_determining (determining_transfer_id, commit_request_id) SELECT determining_transfer_id, MIN(commit_request_id) FROM fx_transfers GROUP BY determining_transfer_id',
      );
    },
    async down(knex) {
      await knex.schema.dropTableIfExists('fx_determining');
    },
  },
  mojaloopSchema({ knexLockTable: `${MIGRATIONS_TABLE}_lock` }),
  {
    // The identity of the ledger this metadata was written with (docs/decisions/0007): one row,
    // `slot` 1, inserted once by whichever instance comes first.
    name: '012_ledger_identity',
    async up(knex) {
      await knex.schema.createTable('ledger_identity', (t) => {
        t.tinyint('slot').unsigned().primary();
        t.string('identity', 40).notNullable();
      });
    },
    async down(knex) {
      await knex.schema.dropTableIfExists('ledger_identity');
    },
  },
];

export const migrationSource: Knex.MigrationSource<Migration> = {
  getMigrations: async () => MIGRATIONS,
  getMigrationName: (migration) => migration.name,
  getMigration: async (migration) => migration,
};

/** The MySQL named lock that serialises migrations across instances. */
const MIGRATION_LOCK = 'central_ledger_migrations';

/** How long an instance waits for another's migrations. */
const MIGRATION_WAIT_SECONDS = 60;

/**
 * Brings the schema up to date. Instances starting at once queue on a MySQL named lock, so
 * exactly one migrates and the others then find nothing left to do (knex's own lock table is
 * itself created racily: two instances can both seed it and then both see it "locked"). The lock
 * is held on the locks' own pool (`locks`): the migrator needs connections of `knex`'s, which
 * may have just one.
 */
export async function migrateLatest(knex: Knex, locks: NamedLockPool): Promise<string[]> {
  const lock = {
    name: MIGRATION_LOCK,
    deadline: Date.now() + MIGRATION_WAIT_SECONDS * 1000,
    failed: (error: unknown) =>
      error instanceof LockTimeoutError
        ? new Error(`another instance held the migration lock for ${MIGRATION_WAIT_SECONDS} s`)
        : error,
  };
  return locks.run(lock, async () => {
    const [, applied] = (await knex.migrate.latest({
      migrationSource,
      tableName: MIGRATIONS_TABLE,
    })) as [number, string[]];
    return applied;
  });
}
