// js_encode.js ENCODER_DIR FILE: token ids of FILE (read as UTF-8) by the reference JavaScript
// encoder of the gpt-3-encoder npm package (fetched by inputs/fetch-data.sh), one per line.
const path = require('path');
const fs = require('fs');
const { encode } = require(path.resolve(process.argv[2], 'Encoder.js'));
const ids = encode(fs.readFileSync(process.argv[3], 'utf8'));
fs.writeFileSync(1, ids.join('\n') + (ids.length ? '\n' : ''));
