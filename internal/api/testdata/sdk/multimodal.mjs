// Drives two running mocker-servers (a vision model and an audio model)
// with the official npm SDKs (openai v6, @anthropic-ai/sdk): image and
// audio content parts on chat, Responses and Messages. Reads
// {"png", "wav" (base64), "vision", "audio" (base URLs)} on stdin and
// prints what each request reported (prompt tokens and text); the Go test
// (multimodal_sdk_test.go) checks the counts. Any SDK error exits 1.
import { createRequire } from 'node:module';
import fs from 'node:fs';

const require = createRequire(process.env.SDK_MODULES + '/');
const OpenAI = require('openai').default;
const Anthropic = require('@anthropic-ai/sdk').default;

const input = JSON.parse(fs.readFileSync(0, 'utf8'));
const vision = new OpenAI({ baseURL: input.vision + '/v1', apiKey: 'sk-test', maxRetries: 0 });
const audio = new OpenAI({ baseURL: input.audio + '/v1', apiKey: 'sk-test', maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: input.vision, apiKey: 'sk-test', maxRetries: 0 });
const question = 'What is in this picture?';
const dataURL = 'data:image/png;base64,' + input.png;

const out = {};
const imageMessages = [{ role: 'user', content: [
  { type: 'text', text: question },
  { type: 'image_url', image_url: { url: dataURL } },
] }];

let r = await vision.chat.completions.create({ model: 'mocker-model', max_tokens: 3, messages: imageMessages });
out.ChatImage = { prompt_tokens: r.usage.prompt_tokens, text: r.choices[0].message.content };

const stream = await vision.chat.completions.create({
  model: 'mocker-model', max_tokens: 3, messages: imageMessages, stream: true, stream_options: { include_usage: true },
});
let text = '';
let usage = null;
for await (const chunk of stream) {
  for (const c of chunk.choices) text += c.delta.content ?? '';
  if (chunk.usage) usage = chunk.usage;
}
out.ChatImageStream = { prompt_tokens: usage.prompt_tokens, text };

r = await audio.chat.completions.create({ model: 'mocker-model', max_tokens: 3, messages: [{ role: 'user', content: [
  { type: 'input_audio', input_audio: { data: input.wav, format: 'wav' } },
  { type: 'text', text: 'Transcribe it.' },
] }] });
out.ChatAudio = { prompt_tokens: r.usage.prompt_tokens, text: r.choices[0].message.content };

const resp = await vision.responses.create({ model: 'mocker-model', max_output_tokens: 3, input: [{ role: 'user', content: [
  { type: 'input_text', text: question },
  { type: 'input_image', image_url: dataURL, detail: 'auto' },
] }] });
out.ResponsesImage = { prompt_tokens: resp.usage.input_tokens, text: resp.output_text };

let m = await anthropic.messages.create({ model: 'mocker-model', max_tokens: 3, messages: [{ role: 'user', content: [
  { type: 'text', text: question },
  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: input.png } },
] }] });
out.MessagesBase64 = { prompt_tokens: m.usage.input_tokens, text: m.content.map((c) => c.text ?? '').join('') };

m = await anthropic.messages.create({ model: 'mocker-model', max_tokens: 3, messages: [{ role: 'user', content: [
  { type: 'text', text: question },
  { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
] }] });
out.MessagesURL = { prompt_tokens: m.usage.input_tokens, text: m.content.map((c) => c.text ?? '').join('') };

process.stdout.write(JSON.stringify(out));
