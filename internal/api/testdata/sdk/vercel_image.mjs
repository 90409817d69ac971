// The Vercel AI SDK (ai + @ai-sdk/openai) sends image parts to a running
// mocker-server: an image given as bytes (a Uint8Array, sent as a data
// URL), and an image given as a URL, over chat completions
// (provider.chat) and the Responses API (provider's default model).
// Reads {"png" (base64), "base"} on stdin, prints the input tokens and
// text of each request. Any SDK error exits 1.
import { createRequire } from 'node:module';
import fs from 'node:fs';

const require = createRequire(process.env.SDK_MODULES + '/');
const { generateText } = require('ai');
const { createOpenAI } = require('@ai-sdk/openai');

const input = JSON.parse(fs.readFileSync(0, 'utf8'));
const provider = createOpenAI({ baseURL: input.base + '/v1', apiKey: 'sk-test' });
const png = Uint8Array.from(Buffer.from(input.png, 'base64'));
const question = 'What is in this picture?';
const messages = (image) => [{ role: 'user', content: [
  { type: 'text', text: question },
  { type: 'image', image, mediaType: 'image/png' },
] }];

const out = {};
for (const [name, model, image] of [
  ['chat_bytes', provider.chat('mocker-model'), png],
  ['chat_url', provider.chat('mocker-model'), new URL('https://example.com/cat.png')],
  ['responses_bytes', provider('mocker-model'), png],
]) {
  const r = await generateText({ model, messages: messages(image), maxOutputTokens: 3, maxRetries: 0 });
  out[name] = { input_tokens: r.usage.inputTokens, text: r.text };
}
process.stdout.write(JSON.stringify(out));
