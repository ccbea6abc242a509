// gen_multilingual.js OUT [NDOCS [plain]]: a deterministic test text for the tokenizer comparisons of
// test_tokenizer_hf.sh: NDOCS (default 400) documents separated by NUL bytes, each a random
// mix (a fixed linear congruential generator, so every run writes the same bytes) of words
// in many scripts, digit runs in several number systems, whitespace runs (spaces, tabs, CR LF,
// no-break, thin and ideographic spaces, U+2028), English contractions in every case (straight and
// curly apostrophes, and U+017F long s), punctuation runs, emoji with joiners and modifiers,
// combining marks (decomposed, out of canonical order, Hangul jamo, singletons: NFC's cases),
// and (unless "plain") strings that spell special tokens: Hugging Face's
// tokenizers make those the special tokens, the SentencePiece ports (llama-tokenizer-js,
// mistral-tokenizer-js) encode them as text.  U+0085 and U+FEFF are left out:
// for JavaScript's \s U+FEFF is a space and U+0085 is not (js-tiktoken matches with it, and
// @huggingface/tokenizers' translation keeps the U+FEFF difference); for White_Space, the \s of
// Oniguruma (Hugging Face's library), Rust's regex (tiktoken) and ptdp, the opposite.
"use strict";
const fs = require("fs");

let seed = 20261126;
const rnd = n => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return Math.floor((seed / 2147483648) * n);
};
const pick = a => a[rnd(a.length)];

const words = [
  "the", "Union", "naïve", "café", "Straße", "façade", "Ωμέγα", "λόγος", "Привет", "мир", "Україна",
  "日本語", "テキスト", "ひらがな", "中文字符", "한국어", "텍스트", "عربي", "مرحبا", "שלום", "עברית", "हिन्दी",
  "नमस्ते", "தமிழ்", "ภาษาไทย", "ქართული", "Հայերեն", "ትግርኛ", "Ελληνικά", "Việt", "Nam", "tiếng",
  "e\u0301", "n\u0303o", "a\u0301\u0323", "\u1112\u1161\u11ab", "\u212b", "\u0344x", "\u00e9\u0300",
  "ǅemal", "ǈ", "ŉ", "ﬁne", "ＡＢＣ", "ｶﾀｶﾅ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𐌰𐌱", "x²", "H₂O",
  "ABC", "McDonald", "iPhone", "HTTP", "snake_case", "camelCase", "CONSTANT_NAME", "a", "I",
];
const digits = ["0", "7", "42", "123", "1234", "12345", "3.14159", "1,000,000", "-17", "2026-11-26",
                "١٢٣٤", "४५६७", "௧௨௩", "一二三", "½", "Ⅷ", "⑦", "𝟘𝟙𝟚", "0x1F", "1e-9", "99999999999"];
const spaces = [" ", " ", " ", "  ", "   ", "\t", "\t\t", " \t ", "\n", "\n\n", "\r\n", "\r\n\r\n", " \n ",
                "\u00a0", "\u3000", "\u2009", "\u2028", "    \n", "\n    ", "\u000b", "\f"];
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D",
                      "\u2019s", "\u2019ll", "'\u017f", "'x", "''", "'"];
const punct = [".", ",", "!", "?", "...", "—", "–", "-", "(", ")", "[", "]", "{", "}", "\"", "“", "”", "‘",
               "’", "«", "»", "…", ";", ":", "/", "\\", "@", "#", "$", "%", "^", "&", "*", "+", "=", "<", ">",
               "|", "~", "`", "__", "--", "==>", "!=", "::", "/*", "*/", "```", "\u200b", "\u200d"];
const emoji = ["🎉", "👍🏽", "👨‍👩‍👧", "🇺🇸", "❤️", "🙂", "🤖", "✅", "⚡"];
const special = ["<|endoftext|>", "<|end_of_text|>", "<|begin_of_text|>", "<s>", "</s>", "<unk>", "<|eot_id|>",
                 "<|", "|>", "<|endoftext", "<0x41>", "▁", "▁▁"];

let plain = false;
function piece() {
  const r = rnd(100);
  if (r < 45) return pick(words) + (rnd(6) === 0 ? pick(contractions) : "");
  if (r < 58) return pick(digits);
  if (r < 78) return pick(punct);
  if (r < 86) return pick(emoji);
  if (r < 90) return plain ? pick(words) : pick(special);
  return pick(words).toUpperCase() + pick(contractions);
}

function doc() {
  const n = 1 + rnd(120);
  let s = rnd(5) === 0 ? pick(spaces) : "";
  for (let i = 0; i < n; i++) s += piece() + (rnd(4) === 0 ? "" : pick(spaces));
  return s;
}

const [out, ndocs, mode] = process.argv.slice(2);
plain = mode === "plain";
const docs = [];
for (let i = 0; i < (ndocs ? Number(ndocs) : 400); i++) docs.push(doc());
fs.writeFileSync(out, docs.join("\0"));
