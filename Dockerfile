# The central-ledger service image.
#
#   docker build -t tb-central-ledger:0.1.0 .
#
# Configuration is only through environment variables (src/config.ts, `ENVIRONMENT`); nothing is
# baked in but HOST=0.0.0.0 (listen on the container's interfaces), PORT=3001 and DATA_DIR.
# The TigerBeetle server is not in this image: it runs as its own containers/pods from the official
# image ghcr.io/tigerbeetle/tigerbeetle (see docker-compose.yml and helm/central-ledger).
#
# Both stages use the same Node release. The tigerbeetle-node client is a native addon shipped
# prebuilt (no compiler needed); Debian bookworm (glibc) is what the project is tested on.

FROM node:20.20.2-bookworm-slim AS build
WORKDIR /app
# Dependencies first: this layer is reused as long as the lock file does not change.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npm run build

FROM node:20.20.2-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3001 \
    DATA_DIR=/app/data
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force \
 && mkdir -p /app/data \
 && chown 1000:1000 /app/data
# Only the compiled service: tests and scripts are not part of the build stage's input.
COPY --from=build /app/dist/src ./dist/src
# The base image's unprivileged `node` user, numerically so that Kubernetes' runAsNonRoot can
# verify it. /app/data (DATA_DIR) is its only writable directory: it holds the journals that are
# used only when MySQL is disabled (mount a volume there in that case).
USER 1000:1000
EXPOSE 3001
# /health answers 200 only when the ledger (TigerBeetle) answers; node itself does the request,
# so the slim image needs no curl.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3001)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself (src/main.ts closes HTTP, then the ledger client).
CMD ["node", "dist/src/main.js"]
