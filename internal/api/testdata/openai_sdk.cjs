// The official openai npm client (v6) against a mocker-server: a streamed
// tool call assembled by the SDK's stream helper, the same request without
// streaming, and a structured output parsed by chat.completions.parse with
// zodResponseFormat. Prints one JSON object for the Go test to check.
// Usage: NODE_PATH=<node_modules> node openai_sdk.cjs BASE_URL
const OpenAI = require('openai');
const { zodResponseFormat, zodFunction } = require('openai/helpers/zod');
const { z } = require('zod');

const WeatherArgs = z.object({
  city: z.string().min(2),
  unit: z.enum(['celsius', 'fahrenheit']),
  days: z.number().int().min(1).max(14),
  when: z.string().datetime().nullable(),
});
const TripArgs = z.object({
  stops: z.array(z.object({ name: z.string(), nights: z.number().int().min(0) })).min(1).max(3),
  traveler: z.string().email().nullable(),
});
const Person = z.object({
  name: z.string(),
  age: z.number().int().min(0).max(120),
  email: z.string().email(),
  tags: z.array(z.enum(['vip', 'new', 'returning'])).max(3),
  address: z.object({ street: z.string(), zip: z.string().regex(/^\d{5}$/) }).nullable(),
});

async function main() {
  const client = new OpenAI({ baseURL: process.argv[2] + '/v1', apiKey: 'sk-test', maxRetries: 0 });
  const tools = [
    zodFunction({ name: 'get_weather', parameters: WeatherArgs }),
    zodFunction({ name: 'book_trip', parameters: TripArgs }),
  ];
  const request = {
    model: 'mocker-model',
    messages: [{ role: 'user', content: 'Weather in Paris, then book a trip' }],
    tools,
    tool_choice: 'required',
    seed: 8,
  };
  const out = { schemas: Object.fromEntries(tools.map((t) => [t.function.name, t.function.parameters])) };

  // Streaming with the accumulation helper.
  const stream = client.chat.completions.stream(request);
  let argumentDeltas = 0;
  stream.on('tool_calls.function.arguments.delta', () => { argumentDeltas++; });
  const streamed = await stream.finalChatCompletion();
  out.stream = {
    finish: streamed.choices[0].finish_reason,
    calls: streamed.choices[0].message.tool_calls.map((c) => ({
      id: c.id, name: c.function.name, arguments: c.function.arguments, parsed: c.function.parsed_arguments,
    })),
    argumentDeltas,
  };

  // The same request, not streamed.
  const whole = await client.chat.completions.create(request);
  out.whole = {
    finish: whole.choices[0].finish_reason,
    content: whole.choices[0].message.content,
    calls: whole.choices[0].message.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
  };

  // Structured output parsed into an object (zod validates it).
  const parsed = await client.chat.completions.parse({
    model: 'mocker-model',
    messages: [{ role: 'user', content: 'Invent a customer' }],
    response_format: zodResponseFormat(Person, 'person'),
    seed: 5,
  });
  out.parsed = parsed.choices[0].message.parsed;
  out.parsedSchema = zodResponseFormat(Person, 'person').json_schema.schema;
  console.log(JSON.stringify(out));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
