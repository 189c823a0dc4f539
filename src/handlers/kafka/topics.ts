/**
 * Topic admin: the topics the service reads and writes, made to exist before it subscribes, and
 * the broker's health.
 */
import type { Admin, Kafka } from 'kafkajs';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config/config';

/** How long a health check waits for the broker. */
const HEALTH_TIMEOUT_MS = 2000;
/** Pause between attempts to find or create the topics on a broker that is not ready for them. */
const TOPIC_RETRY_MS = 2000;

export class TopicAdmin {
  private readonly admin: Admin;

  constructor(
    private readonly config: Config['kafka'],
    kafka: Pick<Kafka, 'admin'>,
    private readonly log: FastifyBaseLogger,
    /** Whether bulk transfers are on: bulk-api-adapter's topics are made to exist too. */
    private readonly serving: { bulk: boolean },
  ) {
    this.admin = kafka.admin();
  }

  connect(): Promise<void> {
    return this.admin.connect();
  }

  disconnect(): Promise<void> {
    return this.admin.disconnect();
  }

  /**
   * A fresh broker hosts none of the topics: subscribing would fail ("does not host this
   * topic-partition") and the start with it. The missing ones are created with the configured
   * partitions (an instance racing to do the same is harmless: "already exists" is success), and
   * the start waits, saying so, until the broker names a leader for every partition.
   */
  async ensureTopics(): Promise<void> {
    const { prepare, fulfil, get, notification, settlementClose } = this.config.topics;
    const { bulkPrepare, bulkFulfil, bulkGet } = this.config.topics;
    const wanted = [prepare, fulfil, get, notification, settlementClose];
    if (this.serving.bulk) wanted.push(bulkPrepare, bulkFulfil, bulkGet);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.createMissing(wanted);
        if (await this.allLed(wanted)) return;
        throw new Error('a partition has no leader yet');
      } catch (error) {
        this.log.warn(
          { err: error, attempt, topics: wanted },
          `waiting for the Kafka topics; trying again in ${TOPIC_RETRY_MS} ms`,
        );
        await new Promise((resolve) => setTimeout(resolve, TOPIC_RETRY_MS));
      }
    }
  }

  /** Whether the broker answers now (for /health). */
  async reachable(): Promise<boolean> {
    const timeout = new Promise<false>((resolve) =>
      setTimeout(() => resolve(false), HEALTH_TIMEOUT_MS).unref(),
    );
    return Promise.race([
      this.admin.describeCluster().then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  }

  private async createMissing(wanted: string[]): Promise<void> {
    const existing = new Set(await this.admin.listTopics());
    const missing = wanted.filter((topic) => !existing.has(topic));
    if (missing.length === 0) return;
    const partitions = this.config.topicPartitions;
    this.log.info({ topics: missing, partitions }, 'creating the Kafka topics the broker lacks');
    await this.admin.createTopics({
      topics: missing.map((topic) => ({ topic, numPartitions: partitions })),
      waitForLeaders: true,
    });
  }

  /** Whether every partition of the topics has a leader. */
  private async allLed(topics: string[]): Promise<boolean> {
    const metadata = await this.admin.fetchTopicMetadata({ topics });
    return metadata.topics.every(
      (topic) =>
        topic.partitions.length > 0 && topic.partitions.every((partition) => partition.leader >= 0),
    );
  }
}
