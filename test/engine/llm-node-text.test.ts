import { describe, expect, it } from 'vitest';
import { firstJsonObject, parseJsonMarkdown } from '../../src/engine/nodes/json-in-text.js';
import { pyJsonDumps, pyStr, pyTypeName } from '../../src/engine/nodes/python-json.js';
import { checkResult, transformResult, parametersOf } from '../../src/engine/nodes/parameter-extractor-schema.js';

describe("reading a model's JSON as Dify does", () => {
  it('parse_and_check_json_markdown: fenced, bare, a list of one object; errors worded as Dify', () => {
    expect(parseJsonMarkdown('```json\n{"category_id": "a"}\n```')).toEqual({ category_id: 'a' });
    expect(parseJsonMarkdown('The answer: {"category_id": "b", "x": [1]} done')).toEqual({ category_id: 'b', x: [1] });
    expect(parseJsonMarkdown('[{"category_id": "c"}]')).toEqual({ category_id: 'c' });
    expect(() => parseJsonMarkdown('no json here')).toThrow('could not find json block in the output.');
    expect(() => parseJsonMarkdown('{"a": }')).toThrow(/^got invalid json object\. error: /);
    expect(() => parseJsonMarkdown('[1, 2]')).toThrow('got invalid return object. obj:[1,2]');
  });

  it('extract_json: the first balanced run that parses as an object', () => {
    expect(firstJsonObject('x [1, 2] then {"a": {"b": [3]}} and {"c": 1}')).toEqual({ a: { b: [3] } });
    expect(firstJsonObject('{"a": 1')).toBeUndefined();
    expect(firstJsonObject('{"a": [1}')).toBeUndefined();
    expect(firstJsonObject('{'.repeat(10_000) + 'x')).toBeUndefined();
  });
});

describe("Python's text forms", () => {
  it('json.dumps separators and ensure_ascii; str(); type()', () => {
    expect(pyJsonDumps({ a: [1, 'ø'], b: { c: null, d: true } })).toBe('{"a": [1, "\\u00f8"], "b": {"c": null, "d": true}}');
    expect(pyJsonDumps({ a: 'ø' }, false)).toBe('{"a": "ø"}');
    expect(pyStr([1, 'a', null, true, { k: 'v' }])).toBe("[1, 'a', None, True, {'k': 'v'}]");
    expect(pyStr('text')).toBe('text');
    expect([pyTypeName('s'), pyTypeName(1), pyTypeName(1.5), pyTypeName(false), pyTypeName(null), pyTypeName([]), pyTypeName({})]).toEqual([
      "<class 'str'>",
      "<class 'int'>",
      "<class 'float'>",
      "<class 'bool'>",
      "<class 'NoneType'>",
      "<class 'list'>",
      "<class 'dict'>",
    ]);
  });
});

describe('parameter checks and coercion', () => {
  const params = parametersOf([
    { name: 'n', type: 'number', description: '', required: true },
    { name: 'tags', type: 'array[string]', description: '', required: false },
    { name: 'flags', type: 'array[boolean]', description: '', required: false },
  ]);
  it('numbers from text as Python int()/float(); booleans only in bool arrays; a list type named in the message', () => {
    expect(transformResult(params, { n: ' 12 ', tags: ['a', 1, 'b'], flags: [true, 1, false] })).toEqual({ n: 12, tags: ['a', 'b'], flags: [true, false] });
    expect(transformResult(params, { n: '1.5e2' })).toEqual({ n: 150, tags: [], flags: [] });
    expect(transformResult(params, { n: '12abc' })).toEqual({ n: 0, tags: [], flags: [] });
    expect(() => checkResult(params, { n: 1, tags: ['a', 2], flags: [] })).toThrow(
      "Invalid value for parameter tags, expected segment type: array[string], actual_type: array[any], python_type: <class 'list'>, value: ['a', 2]",
    );
    expect(() => checkResult(params, { n: true, tags: [], flags: [] })).not.toThrow();
  });
});
