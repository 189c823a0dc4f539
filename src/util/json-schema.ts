/**
 * The type of what a JSON schema accepts, read from the schema itself (declared `as const`), so
 * that a validated value is typed by the schema that checked it rather than by a cast that could
 * drift from it. Covers the keywords the service's schemas use to shape values: type, enum,
 * anyOf, items, properties, required, additionalProperties; the rest (lengths, patterns, ranges)
 * narrow values without changing their type.
 */
export type FromSchema<Schema> = Schema extends { anyOf: readonly (infer Member)[] }
  ? FromSchema<Member>
  : Schema extends { enum: readonly (infer Value)[] }
    ? Value
    : Schema extends { type: infer Name }
      ? OfType<Name, Schema>
      : unknown;

type OfType<Name, Schema> = Name extends 'string'
  ? string
  : Name extends 'number' | 'integer'
    ? number
    : Name extends 'boolean'
      ? boolean
      : Name extends 'null'
        ? null
        : Name extends 'array'
          ? ArrayOf<Schema>
          : Name extends 'object'
            ? ObjectOf<Schema>
            : unknown;

type ArrayOf<Schema> = Schema extends { items: infer Item } ? FromSchema<Item>[] : unknown[];

type ObjectOf<Schema> = Schema extends { properties: infer Properties }
  ? Schema extends { additionalProperties: false }
    ? Fields<Properties, RequiredOf<Schema>>
    : Fields<Properties, RequiredOf<Schema>> & Record<string, unknown>
  : Record<string, unknown>;

type RequiredOf<Schema> = Schema extends { required: readonly (infer Name)[] } ? Name : never;

/** The required properties as they are, the others optional. */
type Fields<Properties, Required> = {
  -readonly [Name in keyof Properties & Required]: FromSchema<Properties[Name]>;
} & {
  -readonly [Name in Exclude<keyof Properties, Required>]?: FromSchema<Properties[Name]>;
};
