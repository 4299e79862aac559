// The official `openai` npm client against tensorfold serve on tinycode:
// completions and chat, streaming and not, stream_options.include_usage, and
// errors surfacing as the client's typed exceptions with the right status;
// tools and tool-call histories on "toolcode" (tinycode with Qwen3's template).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { makeToolcode, startServer, tempDir } from './server.mjs';

let server;
let client;
let toolDir;
let toolServer;
let toolClient;

before(async () => {
  server = await startServer(['--api-key', 'test-key']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'test-key', maxRetries: 0 });
  toolDir = tempDir();
  toolServer = await startServer(['--ctx-size', '1024'], makeToolcode(toolDir.path));
  toolClient = new OpenAI({ baseURL: `${toolServer.url}/v1`, apiKey: 'none', maxRetries: 0 });
});

after(async () => {
  assert.equal(await server.stop(), 0, server.output());
  assert.equal(await toolServer.stop(), 0, toolServer.output());
  toolDir.remove();
});

test('models.list names the served model', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['tinycode']);
});

test('completions.create answers text, finish_reason and usage', async () => {
  const c = await client.completions.create({ model: 'tinycode', prompt: 'def add(a, b):\n', max_tokens: 16, temperature: 0 });
  assert.equal(c.object, 'text_completion');
  assert.equal(c.choices.length, 1);
  assert.ok(c.choices[0].text.length > 0);
  assert.ok(['stop', 'length'].includes(c.choices[0].finish_reason));
  assert.ok(c.usage.prompt_tokens > 0);
  assert.ok(c.usage.completion_tokens >= 1 && c.usage.completion_tokens <= 16);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
});

test('a streamed completion joins to the non-streamed text', async () => {
  const request = { model: 'tinycode', prompt: 'import sys\n', max_tokens: 24, temperature: 0.8, seed: 5 };
  const whole = await client.completions.create(request);
  const stream = await client.completions.create({ ...request, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, whole.choices[0].finish_reason);
});

test('chat.completions.create answers an assistant message', async () => {
  const c = await client.chat.completions.create({
    model: 'tinycode',
    messages: [{ role: 'system', content: 'You write Python.' }, { role: 'user', content: 'a function that adds' }],
    max_completion_tokens: 16,
    temperature: 0,
  });
  assert.equal(c.object, 'chat.completion');
  assert.equal(c.choices[0].message.role, 'assistant');
  assert.equal(typeof c.choices[0].message.content, 'string');
  assert.ok(c.usage.completion_tokens >= 1 && c.usage.completion_tokens <= 16);
});

test('streamed chat with include_usage ends with a usage chunk', async () => {
  const request = { model: 'tinycode', messages: [{ role: 'user', content: 'hello' }], max_tokens: 12, temperature: 0 };
  const whole = await client.chat.completions.create(request);
  const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  let content = '';
  let role = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += 1;
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.choices.length > 0) {
      role = role ?? chunk.choices[0].delta.role ?? null;
      content += chunk.choices[0].delta.content ?? '';
    } else {
      usage = chunk.usage;
    }
  }
  assert.ok(chunks >= 3);
  assert.equal(role, 'assistant');
  assert.equal(content, whole.choices[0].message.content);
  // The same counts; the repeat found all of its prompt but the last token
  // in the prompt cache.
  const { prompt_tokens_details: cached, ...counts } = usage;
  const { prompt_tokens_details: _, ...whole_counts } = whole.usage;
  assert.deepEqual(counts, whole_counts);
  assert.equal(cached.cached_tokens, usage.prompt_tokens - 1);
});

test('the stream helper (chat.completions.stream) reads the SSE', async () => {
  const stream = client.chat.completions.stream({
    model: 'tinycode', messages: [{ role: 'user', content: 'sort a list' }], max_tokens: 8, temperature: 0,
  });
  const final = await stream.finalChatCompletion();
  assert.equal(final.choices[0].message.role, 'assistant');
  assert.ok(['stop', 'length'].includes(final.choices[0].finish_reason));
});

test('a bad request is a BadRequestError (400) naming the field', async () => {
  await assert.rejects(
    client.completions.create({ model: 'tinycode', prompt: 'x', max_tokens: -3 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && /max_tokens/.test(e.message),
  );
  await assert.rejects(
    client.completions.create({ model: 'tinycode', prompt: [1, 2, 99999], max_tokens: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && /99999/.test(e.message),
  );
});

test('another model is a NotFoundError (404) with code model_not_found; no model is the served one', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && e.code === 'model_not_found' && e.param === 'model',
  );
  const answer = await client.completions.create({ prompt: 'def f():\n', max_tokens: 2, temperature: 0 });
  assert.equal(answer.model, 'tinycode');
  assert.equal(answer.choices.length, 1);
});

test('n = 2 gives two choices, each what n = 1 with seed + index gives', async () => {
  const request = { model: 'tinycode', prompt: 'def merge(a, b):\n', max_tokens: 8, temperature: 0.9, seed: 11 };
  const both = await client.completions.create({ ...request, n: 2 });
  assert.deepEqual(both.choices.map((c) => c.index), [0, 1]);
  for (const index of [0, 1]) {
    const alone = await client.completions.create({ ...request, seed: 11 + index });
    assert.equal(both.choices[index].text, alone.choices[0].text);
  }
});

test('a wrong API key is an AuthenticationError (401)', async () => {
  const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-the-key', maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  await assert.rejects(
    wrong.completions.create({ model: 'tinycode', prompt: 'x', max_tokens: 2 }),
    (e) => e instanceof OpenAI.AuthenticationError,
  );
});

test('an unknown route is a NotFoundError (404)', async () => {
  await assert.rejects(client.embeddings.create({ model: 'tinycode', input: 'x' }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
});

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city now',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}];

// An assistant message in OpenAI's shape: content, or tool calls whose
// arguments are a string of a JSON object.
function assertAssistantMessage(choice) {
  assert.equal(choice.message.role, 'assistant');
  if (choice.message.tool_calls?.length) {
    for (const call of choice.message.tool_calls) {
      assert.match(call.id, /^call_[0-9a-f]{24}$/);
      assert.equal(call.type, 'function');
      assert.equal(typeof call.function.name, 'string');
      assert.equal(typeof JSON.parse(call.function.arguments), 'object');
    }
    assert.ok(['tool_calls', 'length'].includes(choice.finish_reason));
  } else {
    assert.equal(typeof choice.message.content, 'string');
    assert.ok(['stop', 'length'].includes(choice.finish_reason));
  }
}

test('tools on a model whose template takes none are a BadRequestError naming tools', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'tinycode', messages: [{ role: 'user', content: 'x' }], tools, max_tokens: 4 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'tools' && /does not accept tools/.test(e.message),
  );
});

test('a request with tools and tool_choice auto is answered in OpenAI shape', async () => {
  const c = await toolClient.chat.completions.create({
    model: 'toolcode',
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools,
    tool_choice: 'auto',
    parallel_tool_calls: true,
    max_tokens: 24,
    temperature: 0,
  });
  assert.equal(c.object, 'chat.completion');
  assertAssistantMessage(c.choices[0]);
});

test('a tool call in the history, its tool message, then the answer', async () => {
  const first = await toolClient.chat.completions.create({
    model: 'toolcode',
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools,
    max_tokens: 16,
    temperature: 0,
  });
  // Whatever tinycode answered, the client sends back a call and its result,
  // as an application does after running the tool.
  const call = first.choices[0].message.tool_calls?.[0] ?? {
    id: 'call_0123456789abcdef01234567',
    type: 'function',
    function: { name: 'get_weather', arguments: JSON.stringify({ city: 'Paris' }) },
  };
  const answer = await toolClient.chat.completions.create({
    model: 'toolcode',
    messages: [
      { role: 'user', content: 'What is the weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ celsius: 21, sky: 'sunny' }) },
    ],
    tools,
    max_tokens: 16,
    temperature: 0,
  });
  assertAssistantMessage(answer.choices[0]);
  assert.ok(answer.usage.prompt_tokens > first.usage.prompt_tokens);
});

test('a streamed answer with tools reads through the stream helper', async () => {
  const stream = toolClient.chat.completions.stream({
    model: 'toolcode', messages: [{ role: 'user', content: 'Weather in Oslo?' }], tools, max_tokens: 16, temperature: 0,
  });
  const final = await stream.finalChatCompletion();
  assertAssistantMessage(final.choices[0]);
});

test('tool_choice required: the reply is a tool call, then the tool message round trip answers', async () => {
  const forced = await toolClient.chat.completions.create({
    model: 'toolcode', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, tool_choice: 'required',
    max_tokens: 160, temperature: 0,
  });
  const call = forced.choices[0].message.tool_calls?.[0];
  assert.ok(call, JSON.stringify(forced));
  assert.equal(forced.choices[0].finish_reason, 'tool_calls');
  assert.equal(call.function.name, 'get_weather');
  assert.equal(typeof JSON.parse(call.function.arguments).city, 'string');
  const answer = await toolClient.chat.completions.create({
    model: 'toolcode',
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      forced.choices[0].message,
      { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' },
    ],
    tools, max_tokens: 16, temperature: 0,
  });
  assertAssistantMessage(answer.choices[0]);
});

test('a streamed forced call arrives as delta.tool_calls and the stream helper rebuilds it', async () => {
  const request = {
    model: 'toolcode', messages: [{ role: 'user', content: 'Weather in Oslo?' }], tools,
    tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 160, temperature: 0.7, seed: 3,
  };
  const whole = await toolClient.chat.completions.create(request);
  const chunks = await toolClient.chat.completions.create({ ...request, stream: true });
  const deltas = [];
  let finish = null;
  for await (const chunk of chunks) {
    for (const choice of chunk.choices) {
      deltas.push(...(choice.delta.tool_calls ?? []));
      finish = choice.finish_reason ?? finish;
    }
  }
  assert.equal(finish, 'tool_calls');
  // The opening delta, then the arguments in the pieces the model wrote them in.
  assert.ok(deltas.length > 2, JSON.stringify(deltas));
  assert.equal(deltas[0].function.name, 'get_weather');
  assert.equal(deltas[0].function.arguments, '');
  assert.equal(deltas.map((d) => d.function.arguments ?? '').join(''), whole.choices[0].message.tool_calls[0].function.arguments);
  const final = await toolClient.chat.completions.stream(request).finalChatCompletion();
  assert.equal(final.choices[0].message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(final.choices[0].message.tool_calls[0].function.arguments),
    JSON.parse(whole.choices[0].message.tool_calls[0].function.arguments));
});
