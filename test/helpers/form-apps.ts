import { endNode, startNode, templateNode, workflowDsl } from './workflow-dsl.js';

/**
 * A workflow whose Human Input node asks for every input type; delivery methods as given. `more`
 * adds the types Dify's current node schema lacks but DSLs may hold: an older `text_input` and a `number`.
 */
export function reviewApp(deliveryMethods: unknown[], formContent = '# Review of {{#start.draft#}}\n\nPlease decide.', opts: { files?: boolean; more?: boolean } = {}): string {
  return workflowDsl(
    [
      startNode([{ variable: 'draft' }]),
      {
        id: 'review',
        type: 'human-input',
        title: 'Review',
        delivery_methods: deliveryMethods,
        form_content: formContent,
        inputs: [
          { type: 'paragraph', output_variable_name: 'comment', default: { type: 'variable', selector: ['start', 'draft'], value: '' } },
          { type: 'select', output_variable_name: 'choice', option_source: { type: 'constant', value: ['ok', 'redo'] } },
          ...(opts.files === false ? [] : [{ type: 'file', output_variable_name: 'doc', allowed_file_types: ['document'], allowed_file_extensions: [], allowed_file_upload_methods: ['local_file'] },
          { type: 'file-list', output_variable_name: 'docs', allowed_file_types: ['document'], allowed_file_extensions: [], allowed_file_upload_methods: ['local_file'], number_limits: 2 }]),
          ...(opts.more ? [{ type: 'text_input', output_variable_name: 'title' }, { type: 'number', output_variable_name: 'score' }] : []),
        ],
        user_actions: [
          { id: 'approve', title: 'Approve', button_style: 'primary' },
          { id: 'reject', title: 'Reject', button_style: 'ghost' },
        ],
        timeout: 1,
        timeout_unit: 'day',
      },
      templateNode('approved', 'approved: {{ c }} / {{ ch }} / {{ d }}', { c: ['review', 'comment'], ch: ['review', 'choice'], d: ['review', opts.files === false ? 'choice' : 'doc', ...(opts.files === false ? [] : ['filename'])] }),
      templateNode('rejected', 'rejected: {{ c }}', { c: ['review', 'comment'] }),
      endNode({ decision: ['approved', 'output'] }, 'end'),
      endNode({ decision: ['rejected', 'output'] }, 'end2'),
    ],
    [
      ['start', 'review'],
      ['review', 'approved', 'approve'],
      ['review', 'rejected', 'reject'],
      ['approved', 'end'],
      ['rejected', 'end2'],
    ],
  );
}
