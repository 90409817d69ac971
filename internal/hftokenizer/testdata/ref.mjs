// ref.mjs: the independent reference for hftokenizer's tests. It loads a
// Hugging Face tokenizer directory with tokenizers.js
// (@huggingface/tokenizers, the tokenizer code of transformers.js) and
// prints, as JSON on stdout, for every input text:
//   special: encode(text, add_special_tokens=true).ids
//   plain:   encode(text, add_special_tokens=false).ids
//   decoded / decodedSkip: decode(special ids) without / with
//                          skip_special_tokens
// and for every id list in "decode": decoded / decodedSkip.
//
// Usage: node ref.mjs NODE_MODULES_DIR TOKENIZER_DIR INPUT.json
// INPUT.json: {"texts": ["…"], "decode": [[1, 2, 3]]}
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, dir, inputPath] = process.argv.slice(2);
const { Tokenizer } = await import(pathToFileURL(path.join(modules, "@huggingface/tokenizers/dist/tokenizers.mjs")).href);

const read = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
const configPath = path.join(dir, "tokenizer_config.json");
const tokenizer = new Tokenizer(read("tokenizer.json"), fs.existsSync(configPath) ? read("tokenizer_config.json") : {});
const input = JSON.parse(fs.readFileSync(inputPath, "utf8"));

// decode() rejects an empty list; an empty list decodes to "".
const decode = (ids, skip) => (ids.length === 0 ? "" : tokenizer.decode(ids, { skip_special_tokens: skip }));

const encodings = (input.texts ?? []).map((text) => {
  const special = tokenizer.encode(text, { add_special_tokens: true }).ids;
  const plain = tokenizer.encode(text, { add_special_tokens: false }).ids;
  return { special, plain, decoded: decode(special, false), decodedSkip: decode(special, true) };
});
const decodes = (input.decode ?? []).map((ids) => ({ decoded: decode(ids, false), decodedSkip: decode(ids, true) }));
process.stdout.write(JSON.stringify({ encodings, decodes }));
