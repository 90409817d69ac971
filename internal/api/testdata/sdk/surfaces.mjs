// Drives a running mocker-server with the official npm SDKs (openai v6,
// @anthropic-ai/sdk) and prints one JSON object with what each scenario
// saw; the Go test (sdk_surfaces_test.go) checks it against the server's
// own answers. Usage: node surfaces.mjs BASE_URL SCENARIO...
//
// An SDK error (a thrown exception) fails the scenario: the script prints
// {"error": …} for it and exits 1.
import { createRequire } from 'node:module';

const require = createRequire(process.env.SDK_MODULES + '/');
const OpenAI = require('openai').default;
const Anthropic = require('@anthropic-ai/sdk').default;

const [base, ...scenarios] = process.argv.slice(2);
const openai = new OpenAI({ baseURL: base + '/v1', apiKey: 'sk-test', maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: base, apiKey: 'sk-test', maxRetries: 0 });

const weather = {
  type: 'object',
  properties: {
    city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
    units: { type: 'string', enum: ['c', 'f'] },
  },
  required: ['city', 'days'],
  additionalProperties: false,
};

// The text of a response's message items. (response.output_text is the
// SDK's own convenience; openai 6.30's stream helper does not set it on the
// final response.)
const outputText = (resp) => resp.output.filter((o) => o.type === 'message')
  .flatMap((o) => o.content).map((c) => c.text).join('');

const run = {
  // Responses: a text answer, non-streamed and streamed.
  async responses_text() {
    const r = await openai.responses.create({ model: 'mocker-model', input: 'Hello!', max_output_tokens: 5 });
    const stream = openai.responses.stream({ model: 'mocker-model', input: 'Hello!', max_output_tokens: 5 });
    const deltas = [];
    const types = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    for await (const e of stream) types.push(e.type);
    const final = await stream.finalResponse();
    return {
      create: { id: r.id, status: r.status, text: r.output_text, usage: r.usage, output: r.output.map((o) => o.type) },
      stream: { deltas, types, text: outputText(final), status: final.status, usage: final.usage },
    };
  },
  // Responses with the server's reasoning framing.
  async responses_reasoning() {
    const r = await openai.responses.create({
      model: 'mocker-model', input: 'Think first.', max_output_tokens: 8, reasoning: { effort: 'low' },
    });
    const stream = openai.responses.stream({
      model: 'mocker-model', input: 'Think first.', max_output_tokens: 8, reasoning: { effort: 'low' },
    });
    const reasoning = [];
    stream.on('response.reasoning_text.delta', (e) => reasoning.push(e.delta));
    const final = await stream.finalResponse();
    const items = (resp) => resp.output.map((o) => ({
      type: o.type,
      text: o.type === 'reasoning' ? o.content.map((c) => c.text).join('') : o.content.map((c) => c.text).join(''),
    }));
    return {
      create: { items: items(r), usage: r.usage },
      stream: { items: items(final), reasoning: reasoning.join('') },
    };
  },
  // Responses with a function tool the model must call.
  async responses_function_call() {
    const tools = [{ type: 'function', name: 'get_weather', description: 'Weather', parameters: weather, strict: true }];
    const r = await openai.responses.create({
      model: 'mocker-model', input: 'Weather in Paris?', tools, tool_choice: 'required',
    });
    const stream = openai.responses.stream({
      model: 'mocker-model', input: 'Weather in Paris?', tools, tool_choice: 'required',
    });
    const args = [];
    stream.on('response.function_call_arguments.delta', (e) => args.push(e.delta));
    const final = await stream.finalResponse();
    const calls = (resp) => resp.output.filter((o) => o.type === 'function_call')
      .map((o) => ({ name: o.name, call_id: o.call_id, arguments: JSON.parse(o.arguments) }));
    return { create: calls(r), stream: calls(final), streamed_arguments: args.join('') };
  },
  // Responses with text.format json_schema.
  async responses_json_schema() {
    const text = { format: { type: 'json_schema', name: 'weather', schema: weather, strict: true } };
    const r = await openai.responses.create({ model: 'mocker-model', input: 'JSON please', text });
    const stream = openai.responses.stream({ model: 'mocker-model', input: 'JSON please', text });
    const final = await stream.finalResponse();
    return { create: JSON.parse(r.output_text), stream: JSON.parse(outputText(final)) };
  },
  // Embeddings: floats, the SDK's default base64 transport decoded to
  // floats, and raw base64.
  async embeddings() {
    const f = await openai.embeddings.create({ model: 'mocker-model', input: ['one two', 'three'], encoding_format: 'float' });
    const d = await openai.embeddings.create({ model: 'mocker-model', input: ['one two', 'three'] });
    const b = await openai.embeddings.create({ model: 'mocker-model', input: 'one two', encoding_format: 'base64', dimensions: 8 });
    return {
      float: f.data.map((x) => x.embedding),
      default: d.data.map((x) => Array.from(x.embedding)),
      base64: b.data[0].embedding,
      usage: f.usage,
    };
  },
  // A pooling model (--runner pooling): embeddings through the SDK, and
  // vLLM's score and rerank through the SDK's generic post (the SDK has no
  // method of its own for them; this is how a Node client calls them).
  async pooling() {
    const texts = ['the quick brown fox', 'the quick brown fox', 'the quick red fox', 'taxes are due'];
    const e = await openai.embeddings.create({ model: 'mocker-model', input: texts });
    const score = await openai.post('/score', { body: { model: 'mocker-model', text_1: texts[0], text_2: texts.slice(1) } });
    const rerank = await openai.post('/rerank', { body: { model: 'mocker-model', query: texts[0], documents: texts.slice(1).reverse(), top_n: 2 } });
    return { embeddings: e.data.map((x) => Array.from(x.embedding)), score, rerank };
  },
  // Anthropic Messages: text, non-streamed and streamed.
  async messages_text() {
    const params = { model: 'mocker-model', max_tokens: 6, system: 'Be brief.', messages: [{ role: 'user', content: 'Hello!' }] };
    const m = await anthropic.messages.create(params);
    const stream = anthropic.messages.stream(params);
    const texts = [];
    stream.on('text', (t) => texts.push(t));
    const final = await stream.finalMessage();
    const text = (msg) => msg.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
    return {
      create: { text: text(m), stop_reason: m.stop_reason, usage: m.usage, types: m.content.map((c) => c.type) },
      stream: { text: text(final), deltas: texts, stop_reason: final.stop_reason, usage: final.usage },
    };
  },
  // Anthropic Messages with a tool the model must use, and the tool
  // result sent back.
  async messages_tool_use() {
    const tools = [{ name: 'get_weather', description: 'Weather', input_schema: weather }];
    const params = {
      model: 'mocker-model', max_tokens: 200, tools, tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    };
    const m = await anthropic.messages.create(params);
    const stream = anthropic.messages.stream(params);
    const partial = [];
    stream.on('inputJson', (p) => partial.push(p));
    const final = await stream.finalMessage();
    const uses = (msg) => msg.content.filter((c) => c.type === 'tool_use').map((c) => ({ name: c.name, id: c.id, input: c.input }));
    const use = uses(m)[0];
    const next = await anthropic.messages.create({
      model: 'mocker-model', max_tokens: 4, tools,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: m.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
      ],
    });
    return {
      create: { uses: uses(m), stop_reason: m.stop_reason },
      stream: { uses: uses(final), stop_reason: final.stop_reason, partial_json: partial.join('') },
      after_result: { stop_reason: next.stop_reason, types: next.content.map((c) => c.type) },
    };
  },
  // Anthropic errors in Anthropic's shape through the SDK's error classes.
  async messages_errors() {
    try {
      await anthropic.messages.create({ model: 'mocker-model', messages: [{ role: 'user', content: 'x' }] });
      return { thrown: false };
    } catch (e) {
      return { thrown: true, status: e.status, class: e.constructor.name, type: e.error?.error?.type, message: e.error?.error?.message };
    }
  },
};

const out = {};
let failed = false;
for (const name of scenarios) {
  try {
    out[name] = await run[name]();
  } catch (e) {
    out[name] = { error: String(e && e.stack || e) };
    failed = true;
  }
}
// exitCode, not exit(): a large result must be flushed to the pipe first.
process.stdout.write(JSON.stringify(out));
process.exitCode = failed ? 1 : 0;
