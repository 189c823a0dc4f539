# The central-ledger service image.
#
#   docker build -t tb-central-ledger:0.1.0 .
#
# /opt/app is laid out as central-ledger's own image (`npm run build` lays out dist/ the same way;
# docs/operations.md, "The image"):
#   src/                       the compiled service: src/api/index.js and src/handlers/index.js,
#                              central-ledger's entry points; src/main.js, ours
#   config/default.json        our central-ledger-format defaults; Mojaloop's charts mount their
#                              ConfigMap over /opt/app/config
#   package.json, node_modules production dependencies only; `npm start`, `npm run migrate`
#   data/                      DATA_DIR, used only by the embedded ledger and metadata journals
# Two ways to start it, one image:
#   - CMD below, `node src/main.js`: our own configuration (src/config/config.ts variables and
#     CONFIG_FILE), every role in one process: docker-compose.yml and helm/central-ledger;
#   - the commands Mojaloop's charts set, `node src/api/index.js`, `node src/handlers/index.js
#     handler --prepare ...` and `npm run migrate`: central-ledger's configuration.
# The TigerBeetle server is not in this image: it runs as its own containers/pods from the official
# image ghcr.io/tigerbeetle/tigerbeetle (see docker-compose.yml and helm/central-ledger).
#
# Both stages use the same Node release. The tigerbeetle-node client is a native addon shipped
# prebuilt (no compiler needed); Debian bookworm (glibc) is what the project is tested on.

FROM node:20.20.2-bookworm-slim AS build
WORKDIR /build
# Dependencies first: this layer is reused as long as the lock file does not change.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.ts ./scripts/build.ts
COPY config ./config
COPY src ./src
RUN npm run build

FROM node:20.20.2-bookworm-slim AS runtime
# HOST: listen on the container's interfaces (central-ledger's files say the same). No PORT: our
# own variables win over central-ledger's file, whose PORT (3001, central-settlement's 3007) must
# hold; ours defaults to 3001 too. npm writes no log files or update checks: with a read-only root
# file system `npm run migrate` has nowhere to put them.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    DATA_DIR=/opt/app/data \
    NPM_CONFIG_LOGS_MAX=0 \
    NPM_CONFIG_UPDATE_NOTIFIER=false
WORKDIR /opt/app
# The generated manifest and lock first: this layer is reused while the dependencies stay.
COPY --from=build /build/dist/package.json /build/dist/package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force \
 && mkdir data \
 && chown 1000:1000 data
COPY --from=build /build/dist/src ./src
COPY --from=build /build/dist/config ./config
# The base image's unprivileged `node` user, numerically so that Kubernetes' runAsNonRoot can
# verify it. Everything but data/ belongs to root and is world-readable: any uid runs it (the
# charts' runAsUser is 1001) and none can change it. data/ (DATA_DIR) is the only directory the
# service writes, and only with the embedded ledger or without MySQL: mount a volume there then.
USER 1000:1000
EXPOSE 3001
# /health answers 200 only when the ledger (TigerBeetle) answers; node itself does the request,
# so the slim image needs no curl. (Kubernetes ignores HEALTHCHECK: the charts probe by HTTP.)
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3001)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself (src/main.ts closes HTTP, then the ledger client).
CMD ["node", "src/main.js"]
