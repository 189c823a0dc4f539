import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

import { stableUuid } from '../../src/handlers/kafka/messages';

/** The derivation as first written: the digest's first 16 bytes, version 8, variant 10. */
function stableUuidFromBytes(text: string): string {
  const bytes = createHash('sha256').update(text).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return [0, 8, 12, 16, 20].map((at, i, all) => hex.slice(at, all[i + 1] ?? 32)).join('-');
}

test('stableUuid is the same id it always was for the same text', () => {
  const texts = ['', 'commit:b51ec534-ee48-4575-b6a9-ead2955b8069', 'é€😀', 'x'.repeat(5000)];
  for (let i = 0; i < 2000; i++) texts.push(`prepare:${i}`);
  const seen = new Set<string>();
  for (const text of texts) {
    const id = stableUuid(text);
    assert.equal(id, stableUuidFromBytes(text), text);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    seen.add(id);
  }
  assert.equal(seen.size, texts.length);
});
