/**
 * Every failure leaves the service as an FSPIOP error body, with the codes and statuses
 * central-ledger's Hapi server and central-services-error-handling give: schema failures 3101,
 * malformed JSON 3000, an unknown path 404 with 3002, a known path with another method 405 with
 * 3000, an unreachable ledger 2003, and anything unexpected 2001 (logged, never a stack trace to
 * the caller). Errors before routing (a bad URL, an over-long path parameter, an unparseable
 * request) get FSPIOP bodies too.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifyServerOptions,
} from 'fastify';
import { FspiopCode, FspiopError } from '../../domain/shared/errors';
import { MetadataUnavailableError } from '../../ports/metadata';
import { LedgerUnavailableError } from '../../ports/ledger';

export function toFspiopError(error: unknown): { error: FspiopError; unexpected: boolean } {
  if (error instanceof FspiopError) return { error, unexpected: false };
  if (error instanceof LedgerUnavailableError || error instanceof MetadataUnavailableError) {
    return {
      error: new FspiopError(FspiopCode.SERVICE_UNAVAILABLE, error.message),
      unexpected: false,
    };
  }
  const fastifyError = error as Partial<FastifyError> & { validation?: unknown };
  if (fastifyError.validation !== undefined) {
    return {
      error: new FspiopError(
        FspiopCode.MALFORMED_SYNTAX,
        fastifyError.message ?? 'invalid request',
      ),
      unexpected: false,
    };
  }
  switch (fastifyError.code) {
    // Hapi's answer to unparseable JSON is a plain 400, which the error plugin turns into 3000.
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return {
        error: new FspiopError(FspiopCode.GENERIC_CLIENT, 'Invalid request payload JSON format'),
        unexpected: false,
      };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_TYPE':
    case 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE':
      return {
        error: new FspiopError(
          FspiopCode.MALFORMED_SYNTAX,
          fastifyError.message ?? 'unreadable body',
        ),
        unexpected: false,
      };
    // central-ledger answers 2001 (500) here, which blames the server for the client's body.
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        error: new FspiopError(FspiopCode.TOO_LARGE_PAYLOAD, 'request body is too large'),
        unexpected: false,
      };
  }
  if (error instanceof SyntaxError)
    return {
      error: new FspiopError(FspiopCode.MALFORMED_SYNTAX, error.message),
      unexpected: false,
    };
  return { error: new FspiopError(FspiopCode.INTERNAL), unexpected: true };
}

/** The methods each route path answers, to tell an unknown path (404) from a wrong method (405). */
class RouteTable {
  private readonly routes: { pattern: RegExp; methods: Set<string> }[] = [];

  add(url: string, methods: string | string[]): void {
    // Our paths use plain `:param` segments only; a segment matches up to the next slash.
    const source = url
      .split('/')
      .map((segment) =>
        segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
      )
      .join('/');
    const pattern = new RegExp(`^${source}$`);
    const known = this.routes.find((route) => route.pattern.source === pattern.source);
    const entry = known ?? { pattern, methods: new Set<string>() };
    for (const method of Array.isArray(methods) ? methods : [methods])
      entry.methods.add(method.toUpperCase());
    if (known === undefined) this.routes.push(entry);
  }

  methodsAt(url: string): string[] {
    const [path = url] = url.split('?', 1);
    return [
      ...new Set(
        this.routes
          .filter((route) => route.pattern.test(path))
          .flatMap((route) => [...route.methods]),
      ),
    ].sort();
  }
}

/** Fastify options that give the errors raised before routing FSPIOP bodies. */
export const preRoutingErrorOptions: Pick<
  FastifyServerOptions,
  'frameworkErrors' | 'clientErrorHandler'
> = {
  frameworkErrors: answerUnroutableUrl,
  clientErrorHandler: answerUnparseableRequest,
};

/**
 * A path parameter over Fastify's maxParamLength (100), or a bad percent-encoding (Hapi: 400 →
 * 3000).
 */
function answerUnroutableUrl(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
  void reply
    .status(tooLong ? 414 : 400)
    .send(
      new FspiopError(
        FspiopCode.GENERIC_CLIENT,
        tooLong ? 'URI too long' : 'Invalid request URL',
      ).toApiBody(),
    );
}

/**
 * A request Node's HTTP parser refused never reaches Fastify: answer on the socket. Node counts
 * the request line against its header limit, so an overflow is blamed on the URI (414) when the
 * request line is most of what was read, on the headers (431) otherwise.
 */
function answerUnparseableRequest(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return answerOnSocket(
      socket,
      408,
      new FspiopError(FspiopCode.GENERIC_CLIENT, 'Request timeout'),
    );
  if (error.code !== 'HPE_HEADER_OVERFLOW')
    return answerOnSocket(
      socket,
      400,
      new FspiopError(FspiopCode.MALFORMED_SYNTAX, 'unparseable HTTP request'),
    );
  // Node gives the bytes it was parsing as a Buffer (Fastify's typing says otherwise).
  const raw: unknown = (error as { rawPacket?: unknown }).rawPacket;
  const seen = Buffer.isBuffer(raw) ? raw.toString('latin1') : '';
  const lineEnd = seen.indexOf('\r\n');
  let requestLine = 0;
  if (/^[A-Z-]+ \S/.test(seen)) requestLine = lineEnd < 0 ? seen.length : lineEnd;
  if (requestLine > seen.length - requestLine)
    answerOnSocket(socket, 414, new FspiopError(FspiopCode.GENERIC_CLIENT, 'URI too long'));
  else
    answerOnSocket(
      socket,
      431,
      new FspiopError(FspiopCode.GENERIC_CLIENT, 'Request header fields too large'),
    );
}

/**
 * Writes a whole HTTP response with an FSPIOP body straight to a socket Fastify does not serve, and
 * closes it.
 */
function answerOnSocket(socket: Socket, status: number, error: FspiopError, headers = ''): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(error.toApiBody());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${headers}Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

export function installErrorHandling(app: FastifyInstance): void {
  const routes = new RouteTable();
  app.addHook('onRoute', (route) => routes.add(route.url, route.method));
  // Node hands CONNECT to 'connect' listeners and drops the connection when there is none; this
  // is no proxy, so say so.
  app.server.on('connect', (_request: unknown, socket: Socket) =>
    answerOnSocket(socket, 405, new FspiopError(FspiopCode.GENERIC_CLIENT, 'Method Not Allowed')),
  );

  const notFound = (request: FastifyRequest, reply: FastifyReply): void => {
    const allowed = routes.methodsAt(request.url);
    if (allowed.length === 0) {
      // The detail stays short: FSPIOP caps errorDescription at 128 characters.
      const error = new FspiopError(
        FspiopCode.UNKNOWN_URI,
        `${request.method} ${request.url.split('?', 1)[0]}`.slice(0, 100),
      );
      void reply.status(error.httpStatus).send(error.toApiBody());
      return;
    }
    // central-services-error-handling: 405, 3000 "Generic client error - Method Not Allowed",
    // Allow.
    void reply
      .status(405)
      .header('allow', allowed.join(', '))
      .send(new FspiopError(FspiopCode.GENERIC_CLIENT, 'Method Not Allowed').toApiBody());
  };

  app.setErrorHandler((error, request, reply) => {
    // Hapi matches the route before it reads the body: on an unknown route the route is the error
    // (a QUERY without Content-Type failed here with 2001 before).
    if (request.is404) return notFound(request, reply);
    const { error: fspiop, unexpected } = toFspiopError(error);
    if (unexpected) request.log.error({ err: error }, 'unexpected error');
    else request.log.info({ code: fspiop.code, detail: fspiop.message }, 'request refused');
    void reply.status(fspiop.httpStatus).send(fspiop.toApiBody());
  });
  app.setNotFoundHandler(notFound);
}
