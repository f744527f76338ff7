/**
 * A doorbell between processes: "run X has new events", "stop run X". Messages are small hints;
 * the database holds the truth, so a lost message only delays a reader until its next poll.
 */
export interface Bus {
  /** True when other processes (other instances, the CLI) hear what is published here (Redis); false for an in-process bus. */
  readonly shared: boolean;
  publish(channel: string, message: string): Promise<void>;
  /** Calls `handler` for every message on `channel` until the returned function is called. */
  subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
