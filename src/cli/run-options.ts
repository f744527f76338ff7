/** Values `run list` checks its options against (its help names them too). */
export const STATUSES = ['running', 'paused', 'succeeded', 'partial-succeeded', 'failed', 'stopped', 'normal', 'error'] as const;
export const LIMIT_MAX = 1000;
