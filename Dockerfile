# The controller image. Node 24 runs the TypeScript sources directly (type stripping): no build output.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim
ENV NODE_ENV=production RUNPOD_OPERATOR_RESULTS_DIR=/results
WORKDIR /app
# Verified results land here: mount a persistent volume (deploy/base/results-pvc.yaml).
RUN mkdir -p /results && chown 1000:1000 /results
VOLUME /results
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY src ./src
COPY crds ./crds
# The image's `node` user, by number so that Kubernetes can verify runAsNonRoot (deploy/base/deployment.yaml).
USER 1000:1000
ENTRYPOINT ["node", "src/main.ts"]
