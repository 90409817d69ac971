// textref.mjs: the independent reference for the real-tokenizer end-to-end
// tests. What transformers.js' apply_chat_template(tokenize=true) gives:
// the model's chat_template (tokenizer_config.json) rendered with
// @huggingface/jinja, then encoded with tokenizers.js
// (@huggingface/tokenizers) without special tokens — which is what vLLM
// does with a chat request. Also plain encodes, vocabulary strings and
// decodes, so one node process answers everything a test asks.
//
// Usage: node textref.mjs NODE_MODULES_DIR TOKENIZER_DIR < request.json
// request: {"chats":  [{"messages": [...], "tools": [...]|null,
//                       "kwargs": {...}, "add_generation_prompt": true}],
//           "encode": [{"text": "...", "special": true}],
//           "decode": [{"ids": [1, 2], "skip": true}]}
// answer:  {"chats":  [{"text": "...", "ids": [...]} | {"error": "..."}],
//           "encode": [{"ids": [...], "tokens": ["..."]}],
//           "decode": ["..."]}
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const [modules, dir] = process.argv.slice(2);
const require = createRequire(path.join(modules, "noop.js"));
const { Template } = require("@huggingface/jinja");
const { Tokenizer } = await import(pathToFileURL(path.join(modules, "@huggingface/tokenizers", "dist/tokenizers.mjs")).href);

const read = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
const config = read("tokenizer_config.json");
const tokenizer = new Tokenizer(read("tokenizer.json"), config);
const tokenText = (t) => (t == null ? "" : typeof t === "string" ? t : t.content ?? "");

let source = config.chat_template ?? "";
if (Array.isArray(source)) source = (source.find((t) => t.name === "default") ?? source[0]).template;
const template = source ? new Template(source) : null;

const request = JSON.parse(fs.readFileSync(0, "utf8"));
const encode = (text, special) => tokenizer.encode(text, { add_special_tokens: special }).ids;

const chats = (request.chats ?? []).map((c) => {
  try {
    const text = template.render({
      messages: c.messages,
      tools: c.tools ?? null,
      documents: null,
      add_generation_prompt: c.add_generation_prompt ?? true,
      bos_token: tokenText(config.bos_token),
      eos_token: tokenText(config.eos_token),
      ...(c.kwargs ?? {}),
    });
    return { text, ids: encode(text, false) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
});
const encodes = (request.encode ?? []).map(({ text, special }) => {
  const ids = encode(text, special);
  return { ids, tokens: ids.map((id) => tokenizer.id_to_token(id)) };
});
const decodes = (request.decode ?? []).map(({ ids, skip }) =>
  ids.length === 0 ? "" : tokenizer.decode(ids, { skip_special_tokens: skip }));
process.stdout.write(JSON.stringify({ chats, encode: encodes, decode: decodes }));
