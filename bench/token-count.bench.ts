/**
 * Token counting of 1 MB of letters (no whitespace), of English text and of CJK text: the old
 * path (js-tiktoken's cl100k encoder, as `src/llm/usage.ts` counted before) beside the new one
 * (`src/text/tokenizer.ts`: pre-tokenizer pieces, piece cache, pieces capped at
 * TOKENIZER_MAX_PIECE_CHARS), both in this process. The old path is quadratic in a run of
 * letters: 1 MB would take hundreds of hours, so it is measured on 4 KB and 8 KB and extrapolated
 * (× (1 MB / 8 KB)², which the 4→8 KB ratio confirms). On CJK text it is linear but slow (over
 * 100 s for 1 MB on a busy machine), so it is measured on 128 KB and scaled ×8; its token count
 * is compared with the new one's on those 128 KB.
 */
import { Tiktoken } from 'js-tiktoken/lite';
import cl100k from 'js-tiktoken/ranks/cl100k_base';
import { countTokens } from '../src/text/tokenizer.js';
import { DEFAULT_TOKENIZER_MAX_PIECE_CHARS } from '../src/config/defaults.js';
import { fmt } from './lib.js';

const MB = 1024 * 1024;

function rng(seed: number): () => number {
  let x = seed;
  return () => ((x = (x * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
}

function letters(n: number, seed: number): string {
  const r = rng(seed);
  let s = '';
  while (s.length < n) s += String.fromCharCode(97 + Math.floor(r() * 26));
  return s;
}

const WORDS = (
  'the of and to in is that it was for on are as with his they at be this from have or by one had not but what all were when we there can an your which their said if do will each about how up out them then she many some so these would other into has more her two like him see time could no make than first been its who now people my made over did down only way find use may water long little very after words called just where most know'
).split(' ');

function english(n: number, seed: number): string {
  const r = rng(seed);
  const out: string[] = [];
  let size = 0;
  let sentence = 0;
  while (size < n) {
    let w = WORDS[Math.floor(Math.pow(r(), 1.5) * WORDS.length)]!;
    if (sentence === 0) w = w[0]!.toUpperCase() + w.slice(1);
    sentence++;
    const end = sentence > 8 && r() < 0.15;
    if (end) sentence = 0;
    const piece = `${w}${end ? (r() < 0.1 ? '.\n\n' : '. ') : r() < 0.06 ? ', ' : ' '}`;
    out.push(piece);
    size += piece.length;
  }
  return out.join('').slice(0, n);
}

/** Chinese-like text: common CJK characters with a comma or full stop every 8-30 characters. */
function cjk(n: number, seed: number): string {
  const r = rng(seed);
  const common = '的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严';
  let s = '';
  let next = 8 + Math.floor(r() * 22);
  while (s.length < n) {
    s += common[Math.floor(Math.pow(r(), 1.3) * common.length)];
    if (--next === 0) {
      s += r() < 0.3 ? '。' : '，';
      next = 8 + Math.floor(r() * 22);
    }
  }
  return s.slice(0, n);
}

function time<T>(fn: () => T): { ms: number; value: T } {
  const t = performance.now();
  const value = fn();
  return { ms: performance.now() - t, value };
}

export async function run(): Promise<void> {
  const old = new Tiktoken(cl100k);
  const oldCount = (t: string) => old.encode(t, 'all').length;
  const corpora = [
    { name: '1 MB of letters, no whitespace', text: letters(MB, 1) },
    { name: '1 MB of English text', text: english(MB, 2) },
    { name: '1 MB (characters) of CJK text', text: cjk(MB, 3) },
  ];
  console.log(`piece cap TOKENIZER_MAX_PIECE_CHARS = ${DEFAULT_TOKENIZER_MAX_PIECE_CHARS}`);
  console.log('| text | old: js-tiktoken | new: cold | new: warm (piece cache) | speed-up (cold) | tokens old → new |');
  console.log('|---|---|---|---|---|---|');
  for (const c of corpora) {
    const cold = time(() => countTokens(c.text));
    const warm = time(() => countTokens(c.text));
    let oldMs: number;
    let oldNote: string;
    let oldTokens: string;
    if (c.name.includes('letters')) {
      const a = time(() => oldCount(c.text.slice(0, 4 * 1024)));
      const b = time(() => oldCount(c.text.slice(0, 8 * 1024)));
      oldMs = b.ms * (MB / (8 * 1024)) ** 2;
      oldNote = `~${fmt(oldMs / 3_600_000, 1)} h (extrapolated: 4 KB ${fmt(a.ms, 0)} ms, 8 KB ${fmt(b.ms, 0)} ms, ×${fmt(b.ms / a.ms, 1)} per doubling)`;
      oldTokens = `8 KB: ${b.value} → ${countTokens(c.text.slice(0, 8 * 1024))}`;
    } else if (c.name.includes('CJK')) {
      const part = c.text.slice(0, 128 * 1024);
      const o = time(() => oldCount(part));
      oldMs = o.ms * 8;
      oldNote = `~${fmt(oldMs, 0)} ms (128 KB: ${fmt(o.ms, 0)} ms, ×8)`;
      oldTokens = `128 KB: ${o.value} → ${countTokens(part)}`;
    } else {
      const o = time(() => oldCount(c.text));
      oldMs = o.ms;
      oldNote = `${fmt(o.ms, 0)} ms`;
      oldTokens = `${o.value} → ${cold.value}`;
    }
    console.log(`| ${c.name} | ${oldNote} | ${fmt(cold.ms, 0)} ms | ${fmt(warm.ms, 0)} ms | ×${fmt(oldMs / cold.ms, 1)} | ${oldTokens} |`);
  }
}
