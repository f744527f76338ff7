import type { Config } from '../config.js';
import type { Store } from '../store/db.js';
import type { AppStore } from '../apps/app-store.js';
import type { UploadService } from '../files/upload-service.js';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/logger.js';
import type { Metrics } from '../infra/metrics.js';
import type { Queue } from '../infra/queue/queue.js';
import type { ModelProviders } from '../llm/model-provider.js';
import type { TextOffload } from '../text/offload.js';
import type { DocumentParser } from '../knowledge/ingest/parse/document-parser.js';
import type { KnowledgeRetriever, RunFiles } from '../engine/types.js';
import type { ToolRuntime } from '../engine/ports.js';
import { PipelineService, type PipelineServiceDeps } from '../knowledge/pipeline/pipeline-service.js';
import { Crawlers } from '../knowledge/pipeline/crawlers.js';
import { createEmbedder, type Embedder } from '../knowledge/ingest/embedder.js';
import { DatasetService } from '../knowledge/datasets.js';
import { DocumentService, INDEX_JOB, type IndexJobPayload } from '../knowledge/documents/documents.js';
import { Indexer } from '../knowledge/ingest/indexer.js';
import { RetrievalService } from '../knowledge/retrieval/retrieval.js';
import { WorkflowKnowledgeRetriever } from '../knowledge/retrieval/workflow-retriever.js';
import { HitCounter } from '../knowledge/retrieval/hit-counter.js';
import { RerankClient } from '../knowledge/retrieval/rerank-client.js';
import { ExternalKnowledgeClient } from '../knowledge/external/external-knowledge.js';
import type { SecretBox } from '../infra/secret-box.js';
import { TagService } from '../knowledge/documents/tags.js';
import { MetadataService } from '../knowledge/documents/metadata.js';
import { DocumentStatusService } from '../knowledge/documents/document-status.js';
import { SegmentService } from '../knowledge/documents/segments.js';
import { ChildChunkService } from '../knowledge/documents/child-chunks.js';
import { HitTestingService } from '../knowledge/retrieval/hit-testing.js';
import { AnnotationService, type AnnotationDeps } from '../annotations/annotation-service.js';
import { AnnotationIndex } from '../annotations/annotation-index.js';
import { EmbeddingModels } from '../annotations/embedding-models.js';
import { registerAnnotationJobs } from '../annotations/jobs.js';

export interface KnowledgeDeps {
  readonly config: Config;
  readonly store: Store;
  readonly apps: AppStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly queue: Queue;
  readonly uploads: UploadService;
  readonly offload: TextOffload;
  readonly parser: DocumentParser;
  readonly providers: () => ModelProviders;
  /** Seals external knowledge API keys at rest. */
  readonly box: SecretBox;
  /** A message by id (annotations made from a message). */
  readonly findMessage: AnnotationDeps['findMessage'];
  /** Knowledge pipelines: the workspace's app-less uploads as run files (read with the knowledge parsers). */
  readonly pipelineFiles: RunFiles;
  /** Knowledge pipelines: the server's tools, and models, code, templates and HTTP as workflow runs get them. */
  readonly pipelineTools: () => ToolRuntime | undefined;
  readonly pipelinePorts: PipelineServiceDeps['basePorts'];
}

export interface Knowledge {
  readonly embedder: Embedder;
  readonly datasets: DatasetService;
  readonly documents: DocumentService;
  readonly documentStatus: DocumentStatusService;
  readonly segments: SegmentService;
  readonly childChunks: ChildChunkService;
  readonly tags: TagService;
  readonly metadata: MetadataService;
  readonly retrieval: RetrievalService;
  /** Rerank models (knowledge retrieval's `reranking_model`). */
  readonly reranker: RerankClient;
  /** External knowledge bases' `POST {endpoint}/retrieval`. */
  readonly external: ExternalKnowledgeClient;
  readonly hits: HitCounter;
  /** Dify's hit testing: one dataset's records for a query (Service API `…/retrieve`, the console's retrieval test). */
  readonly hitTesting: HitTestingService;
  readonly annotations: AnnotationService;
  /** What the knowledge-retrieval node asks. */
  readonly retriever: KnowledgeRetriever;
  /** Knowledge pipelines attached to datasets, and their runs. */
  readonly pipelines: PipelineService;
}

/**
 * The knowledge side of the composition root: datasets, documents and their indexing job, segments,
 * retrieval and its hit counts, tags, metadata, and app annotations (which share the embedder).
 */
export async function createKnowledge(d: KnowledgeDeps): Promise<Knowledge> {
  const { config, store, clock, logger, queue, offload, providers } = d;
  const k = config.knowledge;
  const embedder = createEmbedder(k);
  const keyword = store.dialect.keywordIndex();
  const vectors = await store.dialect.vectorIndex(logger, k.vectorSearch);
  await keyword.init();
  await vectors.init();
  const index = { embedder, keyword, vectors };
  const datasets = new DatasetService(store.db, clock, embedder, k.retrievalTopKMax, (plain) => d.box.seal(plain));
  const documents = new DocumentService({ db: store.db, clock, uploads: d.uploads, datasets, queue, keyword, vectors, maxSegmentationTokens: k.maxSegmentationTokens, qaModel: k.qaModel, providers });
  const metadata = new MetadataService(store.db, clock, k.metadataNameMaxLength);
  const segments = new SegmentService({ db: store.db, clock, ...index, embeddingsBatchSize: k.embeddingsBatchSize, maxSegmentationTokens: k.maxSegmentationTokens, offload });
  const indexer = new Indexer({
    db: store.db,
    segments: store.dialect.segmentWriter(),
    clock,
    logger,
    uploads: d.uploads,
    ...index,
    embeddingsBatchSize: k.embeddingsBatchSize,
    maxSegmentationTokens: k.maxSegmentationTokens,
    fullDocMaxTokens: k.fullDocMaxTokens,
    providers,
    qaModel: k.qaModel,
    qaConcurrency: k.qaConcurrency,
    offload,
    parser: d.parser,
    onIndexed: (n) => d.metrics.indexedSegments.inc(n),
  });
  queue.register<IndexJobPayload>(INDEX_JOB, {
    run: (p, ctx) => indexer.run(p.runId, ctx.signal),
    onFailed: (p, error) => indexer.fail(p.runId, `Indexing failed: ${error}`),
  });
  const reranker = new RerankClient(config.providers, k.rerankTimeoutSeconds);
  const external = new ExternalKnowledgeClient({ allowHosts: config.ssrfAllowHosts, timeoutSeconds: k.externalTimeoutSeconds, maxResponseBytes: k.externalMaxResponseBytes }, (sealed) => d.box.open(sealed));
  const retrieval = new RetrievalService(store.db, embedder, keyword, vectors, k.retrievalQueryMaxChars, metadata, reranker);
  const hits = new HitCounter(store.db, store.caps.rowLocks, logger, k.hitCountFlushMs);
  const embeddingModels = new EmbeddingModels(k, embedder);
  const annotationIndex = new AnnotationIndex(store.db, embeddingModels, clock, k.embeddingsBatchSize);
  const annotations = new AnnotationService({
    db: store.db,
    clock,
    logger,
    queue,
    index: annotationIndex,
    models: embeddingModels,
    listMaxLimit: config.annotationListMaxLimit,
    questionMaxChars: config.annotationQuestionMaxChars,
    matchTimeoutMs: config.annotationMatchTimeoutMs,
    findMessage: d.findMessage,
    importMaxRecords: config.annotationImportMaxRecords,
    importMaxBytes: config.annotationImportMaxBytes,
  });
  registerAnnotationJobs(queue, annotations, annotationIndex);
  return {
    embedder,
    datasets,
    documents,
    documentStatus: new DocumentStatusService({ db: store.db, clock, queue, documents, statusBatchMax: k.statusBatchMax }),
    segments,
    childChunks: new ChildChunkService({ db: store.db, segments, ...index }),
    tags: new TagService(store.db, clock, k.tagNameMaxLength),
    metadata,
    retrieval,
    reranker,
    external,
    hits,
    hitTesting: new HitTestingService({ datasets, retrieval, metadata, hits, external, topKMax: k.retrievalTopKMax, countsHits: k.retrieveCountsHits }),
    annotations,
    pipelines: new PipelineService({
      db: store.db,
      clock,
      datasets,
      documents,
      uploads: d.uploads,
      indexer,
      crawlers: new Crawlers({
        jina: config.tools.providers.jina ?? {},
        firecrawl: config.tools.providers.firecrawl ?? {},
        allowHosts: config.ssrfAllowHosts,
        timeoutSeconds: config.tools.timeoutSeconds,
        maxResponseBytes: config.tools.maxResponseBytes,
        maxPages: k.pipelineCrawlMaxPages,
        maxCrawlMs: config.runs.maxTimeMs,
      }),
      tools: d.pipelineTools,
      basePorts: d.pipelinePorts,
      extractText: (file, workspaceId, signal) => d.pipelineFiles.extractText(file, workspaceId, signal),
      describeFile: (file, workspaceId) => d.pipelineFiles.describe(file, workspaceId),
      limits: {
        maxSteps: config.runs.maxSteps,
        maxTimeMs: config.runs.maxTimeMs,
        maxItems: k.pipelineRunMaxItems,
        segmentMaxChars: k.segmentMaxChars,
        maxSegmentationTokens: k.maxSegmentationTokens,
        fullDocMaxTokens: k.fullDocMaxTokens,
        chunkInputMaxChars: k.pipelineChunkInputMaxChars,
      },
      crawlerCredential: (provider) => {
        const key = provider === 'jina' ? config.tools.providers.jina?.apiKey : provider === 'firecrawl' ? config.tools.providers.firecrawl?.apiKey : undefined;
        return key ? { id: `${provider}-env`, name: `${provider.toUpperCase()}_API_KEY`, type: 'api-key', is_default: true } : null;
      },
    }),
    retriever: new WorkflowKnowledgeRetriever({ db: store.db, apps: d.apps, datasets, retrieval, reranker, external, hits, metadata, topKMax: k.retrievalTopKMax }),
  };
}
