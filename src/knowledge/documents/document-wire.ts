import type { DocumentTable, IndexingRunTable } from '../../store/schema.js';
import { toSeconds } from '../../infra/clock.js';
import type { UploadedFile } from '../../files/upload-service.js';
import type { DocumentMetadataItem } from './metadata.js';

/** Dify's `display_status` from the stored state. */
export function displayStatus(d: DocumentTable): string {
  if (d.indexing_status === 'waiting') return 'queuing';
  if (d.indexing_status === 'paused') return 'paused';
  if (d.indexing_status === 'error') return 'error';
  if (['parsing', 'cleaning', 'splitting', 'indexing'].includes(d.indexing_status)) return 'indexing';
  if (d.archived) return 'archived';
  if (!d.enabled) return 'disabled';
  return 'available';
}

/** Dify's document object (the spec's table plus what Dify adds). */
export function documentToWire(d: DocumentTable, file: UploadedFile | undefined, hitCount = 0, metadata: readonly DocumentMetadataItem[] = []): Record<string, unknown> {
  return {
    id: d.id,
    position: d.position,
    data_source_type: d.data_source_type,
    data_source_info: { upload_file_id: d.upload_file_id },
    data_source_detail_dict: {
      upload_file: file
        ? {
            id: file.id,
            name: file.name,
            size: file.size,
            extension: file.extension,
            mime_type: file.mimeType,
            created_by: file.createdBy,
            created_at: toSeconds(file.createdAt),
          }
        : null,
    },
    dataset_process_rule_id: d.process_rule_id,
    name: d.name,
    created_from: d.created_from,
    created_by: d.created_by,
    created_at: toSeconds(d.created_at),
    tokens: d.tokens,
    indexing_status: d.indexing_status,
    error: d.error,
    enabled: d.enabled === 1,
    disabled_at: d.disabled_at === null ? null : toSeconds(d.disabled_at),
    disabled_by: d.disabled_by,
    archived: d.archived === 1,
    display_status: displayStatus(d),
    word_count: d.word_count,
    hit_count: hitCount,
    doc_form: d.doc_form,
    // Dify's `value` is a string field: numbers (and built-in dates, in seconds) leave as strings.
    doc_metadata: metadata.map((m) => ({ id: m.id, name: m.name, type: m.type, value: m.value === null ? null : String(m.value) })),
    summary_index_status: null,
    need_summary: false,
  };
}

/** One entry of `indexing-status`. */
export function runToWire(r: IndexingRunTable): Record<string, unknown> {
  const s = (v: number | null) => (v === null ? null : toSeconds(v));
  return {
    id: r.document_id,
    indexing_status: r.status,
    processing_started_at: s(r.processing_started_at),
    parsing_completed_at: s(r.parsing_completed_at),
    cleaning_completed_at: s(r.cleaning_completed_at),
    splitting_completed_at: s(r.splitting_completed_at),
    completed_at: s(r.completed_at),
    paused_at: s(r.paused_at),
    error: r.error,
    stopped_at: s(r.stopped_at),
    completed_segments: r.completed_segments,
    total_segments: r.total_segments,
  };
}
