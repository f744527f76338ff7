import { describe, expect, it } from 'vitest';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { admissionWaitMs, admitRequests, requestAdmission } from '../../src/http/admission.js';

const nextTurn = () => new Promise((r) => setImmediate(r));
/** Keeps the event loop busy for at least `ms`, as handling a request does. */
const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

describe('requestAdmission', () => {
  it('lets a request on a quiet event loop go on at once', () => {
    const admit = requestAdmission(5);
    let went = false;
    admit(() => (went = true));
    expect(went).toBe(true);
  });

  it('with slices off (0), lets every request of a burst go on at once', () => {
    const admit = requestAdmission(0);
    const went: number[] = [];
    for (let i = 0; i < 5; i++) admit(() => (went.push(i), busy(3)));
    expect(went).toEqual([0, 1, 2, 3, 4]);
  });

  it('holds the rest of a burst once a slice is spent: what the first ones scheduled goes first, and the order is kept', async () => {
    const admit = requestAdmission(5);
    const events: string[] = [];
    // ten requests read in one turn; each takes 3 ms and schedules its write for the check phase, as undici does
    for (let i = 0; i < 10; i++) {
      admit(() => {
        events.push(`handle ${i}`);
        busy(3);
        setImmediate(() => events.push(`write ${i}`));
      });
    }
    const inFirstTurn = events.filter((e) => e.startsWith('handle')).length;
    // a slice of 5 ms holds at most two 3 ms requests
    expect(inFirstTurn).toBeGreaterThanOrEqual(1);
    expect(inFirstTurn).toBeLessThanOrEqual(2);
    for (let turn = 0; turn < 20 && events.length < 20; turn++) await nextTurn();

    const handled = events.filter((e) => e.startsWith('handle'));
    expect(handled).toEqual(Array.from({ length: 10 }, (_, i) => `handle ${i}`));
    // the first slice's writes leave before any held request is handled
    expect(events.indexOf(`write ${inFirstTurn - 1}`)).toBeLessThan(events.indexOf(`handle ${inFirstTurn}`));
    // a slice holds at most two: every request's write leaves before the request two places behind it is handled
    for (let i = 0; i < 8; i++) expect(events.indexOf(`write ${i}`)).toBeLessThan(events.indexOf(`handle ${i + 2}`));
  });

  it('a request that arrives while others are held waits behind them', async () => {
    const admit = requestAdmission(5);
    const handled: string[] = [];
    for (let i = 0; i < 6; i++) admit(() => (handled.push(`early ${i}`), busy(3)));
    await nextTurn();
    // two slices have passed (two requests each at most), so some early requests are still held
    expect(handled.length).toBeLessThan(6);
    admit(() => handled.push('late'));
    for (let turn = 0; turn < 10 && handled.length < 7; turn++) await nextTurn();
    expect(handled).toEqual(['early 0', 'early 1', 'early 2', 'early 3', 'early 4', 'early 5', 'late']);
  });
});

describe('admitRequests', () => {
  /** A server's request event, as Node emits it, with the framework's handler behind `admitRequests`. */
  const setUp = () => {
    const server = new EventEmitter() as unknown as Server;
    const handled: string[] = [];
    server.on('request', (req: IncomingMessage) => handled.push(req.url!));
    admitRequests(server, requestAdmission(2));
    const emit = (url: string, destroyed = false) => {
      const req = { url, socket: { destroyed } } as unknown as IncomingMessage;
      server.emit('request', req, {} as ServerResponse);
      return req;
    };
    return { handled, emit };
  };

  it('hands a request to the handler at once on a quiet loop, and a burst in slices, in order, with each wait recorded', async () => {
    const { handled, emit } = setUp();
    const first = emit('/a');
    expect(handled).toEqual(['/a']);
    busy(3); // the slice is spent
    const held = [emit('/b'), emit('/c')];
    expect(handled).toEqual(['/a']);
    for (let turn = 0; turn < 5 && handled.length < 3; turn++) await nextTurn();
    expect(handled).toEqual(['/a', '/b', '/c']);
    expect(admissionWaitMs(first)).toBe(0);
    for (const req of held) expect(admissionWaitMs(req)).toBeGreaterThan(0);
  });

  it('does not hand on a request whose client went away while it waited', async () => {
    const { handled, emit } = setUp();
    emit('/a');
    busy(3);
    const gone = emit('/gone');
    emit('/b');
    (gone.socket as { destroyed: boolean }).destroyed = true;
    for (let turn = 0; turn < 5 && handled.length < 2; turn++) await nextTurn();
    await nextTurn();
    expect(handled).toEqual(['/a', '/b']);
  });
});
