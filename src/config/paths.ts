/** Paths into parsed JSON configuration: the helpers config.ts and mojaloop.ts share. */
export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The value at `path`, undefined when any step is missing or not an object. */
export function getPath(source: JsonObject, path: readonly string[]): unknown {
  let node: unknown = source;
  for (const key of path) {
    if (!isJsonObject(node)) return undefined;
    node = node[key];
  }
  return node;
}

/** Sets the value at `path`, making the objects on the way (replacing what is not one). */
export function setPath(target: JsonObject, path: readonly string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (!isJsonObject(node[key])) node[key] = {};
    node = node[key] as JsonObject;
  }
  node[path[path.length - 1]!] = value;
}
