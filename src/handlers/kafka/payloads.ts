/**
 * The payloads of the transfer topics, checked against the bodies' JSON schemas (the HTTP
 * routes' own) and typed by them: a handler gets the value its schema accepted, or a MessageError
 * (3101) naming the first thing wrong.
 */
import Ajv, { type ValidateFunction } from 'ajv';
import type { FromSchema } from '../../util/json-schema';
import { errorBody, fulfilBody, prepareBody } from '../schemas/transfers';
import { fxFulfilBody, fxPrepareBody } from '../schemas/fx';
import { MessageError } from './messages';

export class PayloadReader<Payload> {
  constructor(private readonly validate: ValidateFunction<Payload>) {}

  /** The payload as its schema types it. */
  read(payload: Record<string, unknown>): Payload {
    if (this.validate(payload)) return payload;
    const first = this.validate.errors?.[0];
    throw new MessageError(
      `payload ${first?.instancePath ?? ''} ${first?.message ?? 'is invalid'}`
        .replace(/\s+/g, ' ')
        .trim(),
    );
  }
}

export type PayloadReaders = ReturnType<typeof payloadReaders>;

/** A reader for each payload the transfer topics carry. */
export function payloadReaders() {
  const ajv = new Ajv({ allErrors: false, coerceTypes: false });
  // The one place a validator is tied to the type its schema describes.
  const reader = <Schema extends object>(schema: Schema): PayloadReader<FromSchema<Schema>> =>
    new PayloadReader(ajv.compile<FromSchema<Schema>>(schema));
  return {
    prepare: reader(prepareBody),
    fulfil: reader(fulfilBody),
    error: reader(errorBody),
    fxPrepare: reader(fxPrepareBody),
    fxFulfil: reader(fxFulfilBody),
  };
}
