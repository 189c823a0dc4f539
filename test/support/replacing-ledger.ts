/**
 * A ledger double for fault and race tests: a real ledger with some of its methods replaced (a
 * call held, slowed, counted, or failing), every other method the ledger's own.
 */
import type { Ledger } from '../../src/ports/ledger';

/** `inner` with the methods in `replaced` taking the place of its own. */
export function replacing(inner: Ledger, replaced: Partial<Ledger>): Ledger {
  return new Proxy(inner, {
    get(target, key: keyof Ledger) {
      const own = replaced[key] ?? target[key];
      return typeof own === 'function' ? own.bind(target) : own;
    },
  });
}
