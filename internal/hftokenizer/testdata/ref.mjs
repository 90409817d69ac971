// ref.mjs: the independent reference for hftokenizer's tests. It loads a
// Hugging Face tokenizer directory with tokenizers.js
// (@huggingface/tokenizers, the tokenizer code of transformers.js) and
// prints, as JSON on stdout, for every input text:
//   special: encode(text, add_special_tokens=true).ids
//   plain:   encode(text, add_special_tokens=false).ids
//   decoded / decodedSkip: decode(special ids) without / with
//                          skip_special_tokens
// and for every id list in "decode": decoded / decodedSkip, and tokens
// (the vocabulary string of each id).
//
// Usage: node ref.mjs NODE_MODULES_DIR TOKENIZER_DIR INPUT.json [IMPLEMENTATION]
// INPUT.json: {"texts": ["…"], "decode": [[1, 2, 3]]}
// IMPLEMENTATION: "tokenizers.js" (default) or "lenml" (@lenml/tokenizers,
// the tokenizer-only fork of transformers.js 3, as a second opinion).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, dir, inputPath, implementation = "tokenizers.js"] = process.argv.slice(2);
const load = async (pkg, file) => import(pathToFileURL(path.join(modules, pkg, file)).href);

const read = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
const configPath = path.join(dir, "tokenizer_config.json");
const tokenizerJSON = read("tokenizer.json");
const tokenizerConfig = fs.existsSync(configPath) ? read("tokenizer_config.json") : {};
let tokenizer, encode, idToToken;
if (implementation === "tokenizers.js") {
  const { Tokenizer } = await load("@huggingface/tokenizers", "dist/tokenizers.mjs");
  tokenizer = new Tokenizer(tokenizerJSON, tokenizerConfig);
  encode = (text, special) => tokenizer.encode(text, { add_special_tokens: special }).ids;
  idToToken = (id) => tokenizer.id_to_token(id);
} else if (implementation === "lenml") {
  const { TokenizerLoader } = await load("@lenml/tokenizers", "dist/main.mjs");
  tokenizer = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
  encode = (text, special) => Array.from(tokenizer.encode(text, { add_special_tokens: special }), Number);
  idToToken = (id) => tokenizer.model.vocab[id];
} else {
  throw new Error(`unknown implementation ${implementation}`);
}
const input = JSON.parse(fs.readFileSync(inputPath, "utf8"));

// decode() rejects an empty list; an empty list decodes to "".
const decode = (ids, skip) => (ids.length === 0 ? "" : tokenizer.decode(ids, { skip_special_tokens: skip }));

const encodings = (input.texts ?? []).map((text) => {
  const special = encode(text, true);
  const plain = encode(text, false);
  return { special, plain, decoded: decode(special, false), decodedSkip: decode(special, true) };
});
const decodes = (input.decode ?? []).map((ids) => ({
  decoded: decode(ids, false),
  decodedSkip: decode(ids, true),
  tokens: ids.map((id) => idToToken(id) ?? null),
}));
process.stdout.write(JSON.stringify({ encodings, decodes }));
