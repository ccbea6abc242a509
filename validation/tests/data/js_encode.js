// js_encode.js ENCODER_DIR FILE: token ids of FILE (read as UTF-8) by the reference JavaScript
// encoder of the gpt-3-encoder npm package (fetched by inputs/fetch-data.sh), one per line.
//
// The package's encode() appends with Array.concat per word, which is quadratic: the whole
// 10 MB corpus would take tens of minutes.  So the text is cut into chunks of whole pattern
// matches (the package's own pattern, run once over the whole text) and encode() is called
// per chunk.  Cutting only between matches gives the same matches again: a match at i depends
// only on the text up to its end and the character after it, and the last match of a chunk is
// already maximal (a run of one class, or whitespace that the chunk's end does not extend).
const path = require('path');
const fs = require('fs');
const { encode } = require(path.resolve(process.argv[2], 'Encoder.js'));
const text = fs.readFileSync(process.argv[3], 'utf8');
const pat = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
const out = [];
let start = 0, count = 0;
for (const m of text.matchAll(pat)) {
  if (++count % 4096 === 0) {
    const end = m.index + m[0].length;
    for (const id of encode(text.slice(start, end))) out.push(id);
    start = end;
  }
}
for (const id of encode(text.slice(start))) out.push(id);
fs.writeFileSync(1, out.join('\n') + (out.length ? '\n' : ''));
