/**
 * Something an imported app names that this server cannot serve yet (a provider without
 * credentials, a dataset that does not exist here, …): the app imports, the node fails when run.
 */
export interface ImportWarning {
  readonly node_id: string;
  readonly node_type: string;
  /** What is missing, e.g. `model provider "deepseek"`, `dataset 6f1e…`, `python module numpy`. */
  readonly part: string;
  /** The setting (or command option) that makes it available, e.g. `DEEPSEEK_API_KEY`; null when none would (a plugin Dovetail does not have). */
  readonly setting: string | null;
  /** One sentence naming the node, the part and the setting. */
  readonly message: string;
}
