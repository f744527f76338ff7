/** A code node program (or a template) failed; the message is what the node reports. */
export class CodeExecutionError extends Error {
  override name = 'CodeExecutionError';
}
