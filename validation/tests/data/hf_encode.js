// hf_encode.js: independent JavaScript encoders for test_tokenizer_hf.sh.
//   node hf_encode.js IMPL NODE_MODULES TOKENIZER_JSON DOCS
// DOCS holds documents separated by NUL bytes; each document is encoded alone, without special
// tokens (no BOS), and its ids are written as one line (space-separated), as
// `tokenize_tool HuggingFaceTokenizer TOKENIZER_JSON - encode-docs DOCS` writes them.
// IMPL: hf        @huggingface/tokenizers (a JavaScript port of Hugging Face's tokenizers)
//       lenml     @lenml/tokenizers (transformers.js' tokenizers, packaged)
//       llama3    llama3-tokenizer-js (its own baked data; TOKENIZER_JSON unused)
//       llama2    llama-tokenizer-js (SentencePiece's algorithm on its own baked data)
//       mistral   mistral-tokenizer-js (the same for Mistral's vocabulary)
//       tiktoken:NAME  js-tiktoken's encoding NAME (cl100k_base, o200k_base, gpt2)
//       gpt2      gpt-3-encoder's Encoder.js (OpenAI's GPT-2 encoder ported to JavaScript)
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

async function main() {
const [impl, modules, tokFile, docsFile] = process.argv.slice(2);
const req = createRequire(path.join(modules, "x.js"));
const docs = fs.readFileSync(docsFile, "utf8").split("\0");
const json = () => JSON.parse(fs.readFileSync(tokFile, "utf8"));
const config = () => {
  const p = path.join(path.dirname(tokFile), "tokenizer_config.json");
  return fs.existsSync(p) ? JSON.parse(fs.readFileSync(p, "utf8")) : {};
};

let encode;
if (impl === "hf") {
  const { Tokenizer } = req("@huggingface/tokenizers");
  const t = new Tokenizer(json(), config());
  encode = s => t.encode(s, { add_special_tokens: false }).ids;
} else if (impl === "lenml") {
  const { TokenizerLoader } = req("@lenml/tokenizers");
  const t = TokenizerLoader.fromPreTrained({ tokenizerJSON: json(), tokenizerConfig: config() });
  encode = s => t.encode(s, { add_special_tokens: false });
} else if (impl === "llama3") {
  const { llama3Tokenizer } = req("llama3-tokenizer-js/bundle/commonjs-llama3-tokenizer-with-baked-data.cjs");
  encode = s => llama3Tokenizer.encode(s, { bos: false, eos: false });
} else if (impl === "llama2") {
  const m = await import(path.join(modules, "llama-tokenizer-js/llama-tokenizer.js"));
  // add_bos_token false, add_preceding_space true: what the Hugging Face file's Prepend does
  encode = s => (s.length ? m.default.encode(s, false, true) : []);
} else if (impl === "mistral") {
  const m = await import(path.join(modules, "mistral-tokenizer-js/mistral-tokenizer.js"));
  encode = s => (s.length ? m.default.encode(s, false, true) : []);
} else if (impl.startsWith("tiktoken:")) {
  const { getEncoding } = req("js-tiktoken");
  const e = getEncoding(impl.slice(9));
  encode = s => e.encode(s, "all");
} else if (impl === "gpt2") {
  const e = req(path.join(path.dirname(tokFile), "gpt-3-encoder/Encoder.js"));
  encode = s => e.encode(s);
} else {
  console.error("hf_encode.mjs: unknown implementation " + impl);
  process.exit(2);
}
const out = [];
for (const d of docs) out.push(encode(d).join(" "));
process.stdout.write(out.join("\n") + "\n");
}
main().catch(e => {
  console.error("hf_encode.js: " + e.stack);
  process.exit(1);
});
