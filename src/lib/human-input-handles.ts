/** The sourceHandle of a Human Input node's timeout branch (Dify issue #40459: never `__timeout__`). */
export const TIMEOUT_HANDLE = '__timeout';
