# syntax=docker/dockerfile:1
# Dovetail's image: the production install of docs/deployment.md in three stages.
#   docker build -t dovetail .
#   docker run -p 5001:5001 -v dovetail-data:/data dovetail
# The distributed mode (PostgreSQL, Redis, S3, api and worker processes): docker-compose.yml.

# 1. build: every dependency (TypeScript among them), then src/ compiled to dist/.
FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN npm ci
RUN npm run build

# 2. deps: the runtime dependencies only, beside the dist/ built above (`prepare` skips the build
#    where TypeScript is not installed). Native modules are compiled here, with the build tools.
FROM node:20-bookworm-slim AS deps
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
COPY --from=build /app/dist ./dist
RUN npm ci --omit=dev

# 3. runtime: no compiler, no dev dependencies, not root.
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    DOVETAIL_DATA_DIR=/data \
    HOST=0.0.0.0 \
    PORT=5001
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY examples ./examples
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 5001
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 5001) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# `npm start`'s command (node's --no-memory-reducer is a V8 flag node takes only on its command line)
CMD ["node", "--no-memory-reducer", "bin/dovetail.js", "serve"]
