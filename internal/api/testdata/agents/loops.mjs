// Complete agent loops of the agent frameworks people use, against a
// running mocker-server: the Vercel AI SDK (ai + @ai-sdk/openai), LangChain
// JS, the OpenAI Agents SDK, the Anthropic SDK's tool runner and the openai
// SDK's runTools. Each scenario runs its loop once per prompt; the script
// prints one JSON object mapping each scenario to {"loops": [...]}, each
// loop being
//
//   {name, requests: [{input, output, finish}], toolCalls, text, finish, maxTokens}
//
// (requests: the usage of each model call of the loop, in order). The Go
// test (agent_loops_test.go) checks it. Usage: node loops.mjs BASE_URL
// SCENARIO... with the npm packages in SDK_MODULES (scripts/npm-ref.sh).
//
// An exception (an SDK that rejects a response, a loop that hits its turn
// cap) fails its scenario: the scenario maps to {"error": …} and the script
// exits 1.
import { createRequire } from 'node:module';

const require = createRequire(process.env.SDK_MODULES + '/');
const { z } = require('zod');

const [base, ...scenarios] = process.argv.slice(2);

// Turn cap of every framework: far above what a loop should take, so a
// loop that does not end hits it and fails loudly.
const MAX_TURNS = 10;
const MAX_TOKENS = 1024;

// Several conversations per scenario: the mock's seeded "auto" decision
// calls tools on some first turns and answers others directly.
const PROMPTS = [
  'What is the weather in Paris right now?',
  'Should I take an umbrella in Oslo today?',
  'What time is it in Lima, and is it warm there?',
  'Plan a picnic in Rome this afternoon.',
  'Is it a good day for a walk in Madrid?',
  'Compare the weather in Berlin and Vienna.',
];

const weatherArgs = z.object({
  city: z.string().describe('the city'),
  unit: z.enum(['celsius', 'fahrenheit']),
});
const timeArgs = z.object({ city: z.string().describe('the city') });
const weather = async ({ city, unit }) => JSON.stringify({ city, unit, temperature: 21, sky: 'clear' });
const localTime = async ({ city }) => JSON.stringify({ city, time: '14:05' });

const weatherSchema = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
  required: ['city', 'unit'],
  additionalProperties: false,
};
const timeSchema = {
  type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false,
};

async function eachPrompt(loop) {
  const loops = [];
  for (const prompt of PROMPTS) {
    loops.push({ name: prompt, ...(await loop(prompt)) });
  }
  return { loops };
}

// The Vercel AI SDK over chat completions (provider.chat), over the
// Responses API (the provider's default model) and over the Messages API
// (@ai-sdk/anthropic).
function aiSDK() {
  const { generateText, streamText, generateObject, tool, stepCountIs } = require('ai');
  const { createOpenAI } = require('@ai-sdk/openai');
  const provider = createOpenAI({ baseURL: base + '/v1', apiKey: 'sk-test' });
  const tools = {
    get_weather: tool({ description: 'Current weather of a city', inputSchema: weatherArgs, execute: weather }),
    get_time: tool({ description: 'Local time of a city', inputSchema: timeArgs, execute: localTime }),
  };
  const report = (steps, text, finish) => ({
    requests: steps.map((s) => ({ input: s.usage.inputTokens, output: s.usage.outputTokens, finish: s.finishReason })),
    toolCalls: steps.reduce((n, s) => n + s.toolCalls.length, 0),
    text,
    finish,
  });
  return {
    async ai_generate_text() {
      return eachPrompt(async (prompt) => {
        const r = await generateText({
          model: provider.chat('mocker-model'), tools, stopWhen: stepCountIs(MAX_TURNS), prompt, maxRetries: 0,
        });
        return report(r.steps, r.text, r.finishReason);
      });
    },
    // provider(model), the provider's default: the Responses API.
    async ai_generate_text_responses() {
      return eachPrompt(async (prompt) => {
        const r = await generateText({
          model: provider('mocker-model'), tools, stopWhen: stepCountIs(MAX_TURNS), prompt, maxRetries: 0,
        });
        return report(r.steps, r.text, r.finishReason);
      });
    },
    async ai_stream_text_responses() {
      return eachPrompt(async (prompt) => {
        const r = streamText({
          model: provider('mocker-model'), tools, stopWhen: stepCountIs(MAX_TURNS), prompt, maxRetries: 0,
          maxOutputTokens: MAX_TOKENS,
          onError: ({ error }) => { throw error; },
        });
        await r.consumeStream();
        return { ...report(await r.steps, await r.text, await r.finishReason), maxTokens: MAX_TOKENS };
      });
    },
    // @ai-sdk/anthropic: the same loop over the Messages API.
    async ai_generate_text_anthropic() {
      const { createAnthropic } = require('@ai-sdk/anthropic');
      const anthropic = createAnthropic({ baseURL: base + '/v1', apiKey: 'sk-test' });
      return eachPrompt(async (prompt) => {
        const r = await generateText({
          model: anthropic('mocker-model'), tools, stopWhen: stepCountIs(MAX_TURNS), prompt, maxRetries: 0,
          maxOutputTokens: MAX_TOKENS,
        });
        return { ...report(r.steps, r.text, r.finishReason), maxTokens: MAX_TOKENS };
      });
    },
    async ai_stream_text_anthropic() {
      const { createAnthropic } = require('@ai-sdk/anthropic');
      const anthropic = createAnthropic({ baseURL: base + '/v1', apiKey: 'sk-test' });
      return eachPrompt(async (prompt) => {
        const r = streamText({
          model: anthropic('mocker-model'), tools, stopWhen: stepCountIs(MAX_TURNS), prompt, maxRetries: 0,
          maxOutputTokens: MAX_TOKENS,
          onError: ({ error }) => { throw error; },
        });
        await r.consumeStream();
        return { ...report(await r.steps, await r.text, await r.finishReason), maxTokens: MAX_TOKENS };
      });
    },
    async ai_stream_text() {
      return eachPrompt(async (prompt) => {
        const r = streamText({
          model: provider.chat('mocker-model'), tools, stopWhen: stepCountIs(MAX_TURNS), prompt, maxRetries: 0,
          maxOutputTokens: MAX_TOKENS,
          onError: ({ error }) => { throw error; },
        });
        await r.consumeStream();
        return { ...report(await r.steps, await r.text, await r.finishReason), maxTokens: MAX_TOKENS };
      });
    },
    async ai_generate_object() {
      return eachPrompt(async (prompt) => {
        const schema = z.object({
          city: z.string(),
          days: z.number().int().min(1).max(7),
          activities: z.array(z.string()).min(1).max(3),
        });
        const r = await generateObject({ model: provider.chat('mocker-model'), schema, prompt, maxRetries: 0 });
        schema.parse(r.object);
        return {
          requests: [{ input: r.usage.inputTokens, output: r.usage.outputTokens, finish: r.finishReason }],
          toolCalls: 0, text: JSON.stringify(r.object), finish: r.finishReason,
        };
      });
    },
  };
}

// LangChain JS: a bindTools loop written as its docs show it, and
// withStructuredOutput.
function langChain() {
  const { ChatOpenAI } = require('@langchain/openai');
  const { tool } = require('@langchain/core/tools');
  const { HumanMessage } = require('@langchain/core/messages');
  const llm = new ChatOpenAI({
    model: 'mocker-model', apiKey: 'sk-test', maxRetries: 0, configuration: { baseURL: base + '/v1' },
  });
  const tools = [
    tool(weather, { name: 'get_weather', description: 'Current weather of a city', schema: weatherArgs }),
    tool(localTime, { name: 'get_time', description: 'Local time of a city', schema: timeArgs }),
  ];
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const withTools = llm.bindTools(tools);
  const answer = async (messages, stream) => {
    if (!stream) return withTools.invoke(messages);
    let whole;
    for await (const chunk of await withTools.stream(messages)) whole = whole ? whole.concat(chunk) : chunk;
    return whole;
  };
  const bindToolsLoop = (stream) => eachPrompt(async (prompt) => {
    const messages = [new HumanMessage(prompt)];
    const requests = [];
    let toolCalls = 0;
    for (let turn = 0; ; turn++) {
      if (turn === MAX_TURNS) throw new Error(`no answer in ${MAX_TURNS} turns`);
      const ai = await answer(messages, stream);
      messages.push(ai);
      requests.push({
        input: ai.usage_metadata.input_tokens, output: ai.usage_metadata.output_tokens,
        finish: ai.response_metadata.finish_reason,
      });
      if (!ai.tool_calls || ai.tool_calls.length === 0) {
        return { requests, toolCalls, text: ai.text, finish: ai.response_metadata.finish_reason };
      }
      for (const call of ai.tool_calls) {
        toolCalls++;
        messages.push(await byName[call.name].invoke(call));
      }
    }
  });
  return {
    langchain_bind_tools: () => bindToolsLoop(false),
    // The same loop over streamed answers, their chunks concatenated.
    langchain_bind_tools_stream: () => bindToolsLoop(true),
    async langchain_structured_output() {
      const schema = z.object({ city: z.string(), days: z.number().int().min(1).max(7) });
      const structured = llm.withStructuredOutput(schema, { name: 'trip', includeRaw: true });
      return eachPrompt(async (prompt) => {
        const { raw, parsed } = await structured.invoke(prompt);
        schema.parse(parsed);
        return {
          requests: [{
            input: raw.usage_metadata.input_tokens, output: raw.usage_metadata.output_tokens,
            finish: raw.response_metadata.finish_reason,
          }],
          toolCalls: 0, text: JSON.stringify(parsed), finish: raw.response_metadata.finish_reason,
        };
      });
    },
  };
}

// The OpenAI Agents SDK with its Responses model and its chat completions
// model, run() streamed and not, and a handoff.
function agentsSDK() {
  const OpenAI = require('openai').default;
  const {
    Agent, run, tool, OpenAIResponsesModel, OpenAIChatCompletionsModel, setTracingDisabled,
  } = require('@openai/agents');
  setTracingDisabled(true); // no trace export to api.openai.com
  const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'sk-test', maxRetries: 0 });
  const tools = [
    tool({ name: 'get_weather', description: 'Current weather of a city', parameters: weatherArgs, execute: weather }),
    tool({ name: 'get_time', description: 'Local time of a city', parameters: timeArgs, execute: localTime }),
  ];
  const models = {
    responses: () => new OpenAIResponsesModel(client, 'mocker-model'),
    chat: () => new OpenAIChatCompletionsModel(client, 'mocker-model'),
  };
  const report = (r) => ({
    requests: r.rawResponses.map((x) => ({ input: x.usage.inputTokens, output: x.usage.outputTokens })),
    toolCalls: r.newItems.filter((i) => i.type === 'tool_call_item').length,
    text: r.finalOutput,
    finish: r.finalOutput ? 'completed' : 'none',
    maxTokens: MAX_TOKENS,
    lastAgent: r.lastAgent?.name,
  });
  const agent = (model) => new Agent({
    name: 'assistant', instructions: 'Answer briefly.', model: models[model](), tools,
    modelSettings: { maxTokens: MAX_TOKENS },
  });
  const loops = (model, stream) => eachPrompt(async (prompt) => {
    if (!stream) return report(await run(agent(model), prompt, { maxTurns: MAX_TURNS }));
    const r = await run(agent(model), prompt, { maxTurns: MAX_TURNS, stream: true });
    let events = 0;
    for await (const _ of r) events++; // eslint-disable-line no-unused-vars
    await r.completed;
    if (r.error) throw r.error;
    return { ...report(r), events };
  });
  return {
    agents_responses: () => loops('responses', false),
    agents_responses_stream: () => loops('responses', true),
    agents_chat: () => loops('chat', false),
    agents_chat_stream: () => loops('chat', true),
    // A triage agent that must hand off (tool_choice required over its one
    // handoff) to a weather agent, which answers.
    async agents_handoff() {
      const out = { loops: [] };
      for (const model of ['responses', 'chat']) {
        const weatherAgent = new Agent({
          name: 'weather_agent', instructions: 'Answer weather questions briefly.', model: models[model](), tools,
          handoffDescription: 'answers questions about the weather', modelSettings: { maxTokens: MAX_TOKENS },
        });
        const triage = Agent.create({
          name: 'triage', instructions: 'Hand weather questions to the weather agent.', model: models[model](),
          handoffs: [weatherAgent], modelSettings: { toolChoice: 'required', maxTokens: MAX_TOKENS },
        });
        for (const prompt of PROMPTS.slice(0, 2)) {
          const r = await run(triage, prompt, { maxTurns: MAX_TURNS });
          out.loops.push({ name: model + ': ' + prompt, ...report(r), handoffs: r.newItems.filter((i) => i.type === 'handoff_output_item').length });
        }
      }
      return out;
    },
  };
}

// The Anthropic SDK's tool runner with its default settings (it threads
// the conversation on 1.15: the mock refuses the thread and the runner
// continues with the full history), streamed and not. A fetch wrapper
// records each request's status and whether it carried a thread.
function anthropicRunner() {
  const Anthropic = require('@anthropic-ai/sdk').default;
  const { betaZodTool } = require('@anthropic-ai/sdk/helpers/beta/zod');
  const http = [];
  const client = new Anthropic({
    baseURL: base, apiKey: 'sk-test', maxRetries: 0,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      const body = typeof init?.body === 'string' ? JSON.parse(init.body) : {};
      http.push({ status: res.status, thread: body.thread?.type ?? null, messages: body.messages?.length ?? 0 });
      return res;
    },
  });
  const tools = [
    betaZodTool({ name: 'get_weather', description: 'Current weather of a city', inputSchema: weatherArgs, run: weather }),
    betaZodTool({ name: 'get_time', description: 'Local time of a city', inputSchema: timeArgs, run: localTime }),
  ];
  const textOf = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  const loops = (stream) => eachPrompt(async (prompt) => {
    const runner = client.beta.messages.toolRunner({
      model: 'mocker-model', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: prompt }], tools,
      max_iterations: MAX_TURNS, ...(stream ? { stream: true } : {}),
    });
    const requests = [];
    let toolCalls = 0;
    let last;
    for await (const item of runner) {
      const m = stream ? await item.finalMessage() : item;
      if (m.type !== 'message' || m.role !== 'assistant') throw new Error(`message type ${m.type}, role ${m.role}`);
      requests.push({ input: m.usage.input_tokens, output: m.usage.output_tokens, finish: m.stop_reason });
      toolCalls += m.content.filter((b) => b.type === 'tool_use').length;
      last = m;
    }
    if (last.stop_reason === 'tool_use') throw new Error(`the runner stopped on tool_use after ${requests.length} turns`);
    const sent = http.splice(0);
    return { requests, toolCalls, text: textOf(last), finish: last.stop_reason, maxTokens: MAX_TOKENS, http: sent };
  });
  return {
    anthropic_tool_runner: () => loops(false),
    anthropic_tool_runner_stream: () => loops(true),
  };
}

// The openai SDK's runTools, streamed and not.
function openaiRunTools() {
  const OpenAI = require('openai').default;
  const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'sk-test', maxRetries: 0 });
  const tools = [
    { type: 'function', function: { name: 'get_weather', description: 'Current weather of a city', parameters: weatherSchema, function: weather, parse: JSON.parse } },
    { type: 'function', function: { name: 'get_time', description: 'Local time of a city', parameters: timeSchema, function: localTime, parse: JSON.parse } },
  ];
  const loops = (stream) => eachPrompt(async (prompt) => {
    const body = { model: 'mocker-model', messages: [{ role: 'user', content: prompt }], tools };
    if (stream) Object.assign(body, { stream: true, stream_options: { include_usage: true } });
    const runner = client.chat.completions.runTools(body, { maxChatCompletions: MAX_TURNS });
    const text = await runner.finalContent();
    const completions = runner.allChatCompletions();
    return {
      requests: completions.map((c) => ({
        input: c.usage?.prompt_tokens, output: c.usage?.completion_tokens, finish: c.choices[0].finish_reason,
      })),
      toolCalls: runner.messages.filter((m) => m.role === 'tool').length,
      text,
      finish: completions.at(-1).choices[0].finish_reason,
    };
  });
  return { openai_run_tools: () => loops(false), openai_run_tools_stream: () => loops(true) };
}

// Each scenario loads only its own framework (by its name's prefix).
const groups = { ai: aiSDK, langchain: langChain, agents: agentsSDK, anthropic: anthropicRunner, openai: openaiRunTools };

// Scenarios run one after the other (a framework's module loads once);
// the output maps each scenario to its loops or its error.
const out = {};
for (const scenario of scenarios) {
  try {
    const group = groups[scenario.split('_')[0]];
    const run = group && (group.cache ??= group())[scenario];
    if (!run) throw new Error(`unknown scenario ${scenario}`);
    out[scenario] = await run();
  } catch (err) {
    out[scenario] = { error: String(err?.stack ?? err) };
    process.exitCode = 1;
  }
}
console.log(JSON.stringify(out));
