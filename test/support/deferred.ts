/** Promises a test settles by hand, to hold work at a chosen point. */
import { setImmediate as tick } from 'node:timers/promises';

export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: Error) => void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise callback and immediate run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await tick();
}
