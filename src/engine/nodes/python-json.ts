/** Python's text forms of JSON-like values: in src/lib, which the tools share (see there). */
export * from '../../lib/python-json.js';
