/**
 * Preloaded into a bench's server processes (`node --import <this file>`) to count what one run
 * costs the storage: SQL statements (PostgreSQL through `pg`, SQLite through better-sqlite3) by
 * their first keyword, and Redis commands (ioredis) by name. On SIGUSR2 the process writes its
 * counts and its CPU time (µs) as JSON to `<BENCH_STATEMENT_COUNTS>.<pid>` (synchronously), so a
 * bench reads them before and after a measured window. Bench-only: nothing in `src/` knows of it.
 */
import { createRequire } from 'node:module';
import { renameSync, writeFileSync } from 'node:fs';
import process from 'node:process';

const require = createRequire(import.meta.url);
const counts = Object.create(null);
const bump = (key) => (counts[key] = (counts[key] ?? 0) + 1);
const verb = (text) => {
  const m = /^\s*(\w+)/.exec(String(text));
  const w = m ? m[1].toLowerCase() : '?';
  return w === 'start' ? 'begin' : w;
};

try {
  const pg = require('pg');
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, ...rest) {
    bump(`sql ${verb(typeof config === 'string' ? config : config?.text)}`);
    return query.call(this, config, ...rest);
  };
} catch {
  // no pg here
}

try {
  const Sqlite = require('better-sqlite3');
  const probe = new Sqlite(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('select 1'));
  probe.close();
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const f = proto[m];
    proto[m] = function (...args) {
      bump(`sql ${verb(this.source)}`);
      return f.apply(this, args);
    };
  }
  const exec = Sqlite.prototype.exec;
  Sqlite.prototype.exec = function (text) {
    bump(`sql ${verb(text)}`);
    return exec.call(this, text);
  };
} catch {
  // no better-sqlite3 here
}

try {
  const { Redis } = require('ioredis');
  const send = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (command, ...rest) {
    bump(`redis ${String(command?.name ?? '?').toLowerCase()}`);
    return send.call(this, command, ...rest);
  };
} catch {
  // no ioredis here
}

const out = process.env.BENCH_STATEMENT_COUNTS;
if (out) {
  process.on('SIGUSR2', () => {
    const cpu = process.cpuUsage();
    // written aside, then renamed: a reader never sees half a file
    writeFileSync(`${out}.${process.pid}.tmp`, JSON.stringify({ counts, cpuMicros: cpu.user + cpu.system }));
    renameSync(`${out}.${process.pid}.tmp`, `${out}.${process.pid}`);
  });
}
