/**
 * Every failure leaves the service as an FSPIOP error body with the status of its code class:
 * schema and syntax problems are 3101, unknown routes 3002, an unreachable ledger 2003, and
 * anything unexpected 2001 (logged, never a stack trace to the caller).
 */
import type { FastifyError, FastifyInstance } from 'fastify';
import { FspiopCode, FspiopError } from '../domain/errors';
import { MetadataUnavailableError } from '../domain/metadata';
import { LedgerUnavailableError } from '../ledger/batching';

export function toFspiopError(error: unknown): { error: FspiopError; unexpected: boolean } {
  if (error instanceof FspiopError) return { error, unexpected: false };
  if (error instanceof LedgerUnavailableError || error instanceof MetadataUnavailableError) {
    return { error: new FspiopError(FspiopCode.SERVICE_UNAVAILABLE, error.message), unexpected: false };
  }
  const fastifyError = error as Partial<FastifyError> & { validation?: unknown };
  if (fastifyError.validation !== undefined) {
    return { error: new FspiopError(FspiopCode.MALFORMED_SYNTAX, fastifyError.message ?? 'invalid request'), unexpected: false };
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_TYPE':
      return { error: new FspiopError(FspiopCode.MALFORMED_SYNTAX, fastifyError.message ?? 'unreadable body'), unexpected: false };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { error: new FspiopError(FspiopCode.MALFORMED_SYNTAX, 'request body is too large'), unexpected: false };
  }
  if (error instanceof SyntaxError) return { error: new FspiopError(FspiopCode.MALFORMED_SYNTAX, error.message), unexpected: false };
  return { error: new FspiopError(FspiopCode.INTERNAL), unexpected: true };
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const { error: fspiop, unexpected } = toFspiopError(error);
    if (unexpected) request.log.error({ err: error }, 'unexpected error');
    else request.log.info({ code: fspiop.code, detail: fspiop.message }, 'request refused');
    void reply.status(fspiop.httpStatus).send(fspiop.toApiBody());
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new FspiopError(FspiopCode.UNKNOWN_URI, `${request.method} ${request.url}`);
    void reply.status(error.httpStatus).send(error.toApiBody());
  });
}
