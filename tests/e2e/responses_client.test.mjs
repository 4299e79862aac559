// The official `openai` client's Responses API against tensorfold serve:
// /v1/responses whole and streamed (the event sequence with its indices,
// and the SDK's own stream helper), a forced function call and its output
// sent back on "toolcode" (tinycode with Qwen3's template), text.format
// json_schema, the prompt cache's share in usage, the same reply with
// Recall off and on, and OpenAI-shaped errors naming the field.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { makeToolcode, recallReport, startServer, tempDir } from './server.mjs';

let server;      // tinycode
let client;
let toolDir;
let toolServer;  // toolcode, any model name served (--model-alias '*')
let toolClient;
let record;
let recallServer;
let recallClient;

before(async () => {
  server = await startServer([]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
  toolDir = tempDir();
  toolServer = await startServer(['--ctx-size', '1024', '--model-alias', '*'], makeToolcode(toolDir.path));
  toolClient = new OpenAI({ baseURL: `${toolServer.url}/v1`, apiKey: 'none', maxRetries: 0 });
  record = tempDir();
  recallServer = await startServer(['--recall', '--recall-dir', record.path, '--log-level', 'debug']);
  recallClient = new OpenAI({ baseURL: `${recallServer.url}/v1`, apiKey: 'none', maxRetries: 0 });
});

after(async () => {
  assert.equal(await server.stop(), 0, server.output());
  assert.equal(await toolServer.stop(), 0, toolServer.output());
  assert.equal(await recallServer.stop(), 0, recallServer.output());
  toolDir.remove();
  record.remove();
});

const hello = {
  model: 'tinycode',
  instructions: 'You write Python.',
  input: [{ role: 'user', content: [{ type: 'input_text', text: 'a function that adds two numbers' }] }],
  max_output_tokens: 24,
  temperature: 0,
  store: false,
  prompt_cache_key: 'e2e',
};

// What two runs of one greedy request share: everything but the ids and
// times, and the `parsed` field the SDK's stream helper adds to text parts.
function comparable(response) {
  const item = ({ id: _, ...rest }) => (rest.content
    ? { ...rest, content: rest.content.map(({ parsed: __, ...part }) => part) }
    : rest);
  return {
    status: response.status,
    incomplete_details: response.incomplete_details,
    output: response.output.map(item),
    output_tokens: response.usage.output_tokens,
    input_tokens: response.usage.input_tokens,
  };
}

test('responses.create answers a response with a message item and usage', async () => {
  const r = await client.responses.create(hello);
  assert.match(r.id, /^resp_[0-9a-f]+$/);
  assert.equal(r.object, 'response');
  assert.equal(r.model, 'tinycode');
  assert.ok(['completed', 'incomplete'].includes(r.status));
  if (r.status === 'incomplete') assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  assert.equal(r.output.length, 1);
  const [message] = r.output;
  assert.equal(message.type, 'message');
  assert.match(message.id, /^msg_/);
  assert.equal(message.role, 'assistant');
  assert.equal(message.content[0].type, 'output_text');
  assert.ok(message.content[0].text.length > 0);
  assert.equal(r.output_text, message.content[0].text, 'the SDK computes output_text from the items');
  assert.ok(r.usage.output_tokens >= 1 && r.usage.output_tokens <= 24);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(r.usage.output_tokens_details.reasoning_tokens, 0);
  assert.equal(r.instructions, 'You write Python.');
});

test('a streamed response is the event sequence with running indices, and ends as the whole one', async () => {
  const whole = await client.responses.create(hello);
  const stream = await client.responses.create({ ...hello, stream: true });
  const events = [];
  for await (const event of stream) events.push(event);
  events.forEach((e, i) => assert.equal(e.sequence_number, i));
  assert.deepEqual(events.slice(0, 2).map((e) => e.type), ['response.created', 'response.in_progress']);
  assert.equal(events[0].response.status, 'in_progress');
  const last = events.at(-1);
  assert.equal(last.type, whole.status === 'completed' ? 'response.completed' : 'response.incomplete');
  // Between them: the message item opens at output_index 0, its one part at
  // content_index 0, deltas, then the done events in order.
  const middle = events.slice(2, -1);
  assert.deepEqual(middle.slice(0, 2).map((e) => e.type), ['response.output_item.added', 'response.content_part.added']);
  assert.deepEqual(middle.slice(-3).map((e) => e.type),
    ['response.output_text.done', 'response.content_part.done', 'response.output_item.done']);
  const deltas = middle.slice(2, -3);
  assert.ok(deltas.length >= 1);
  const itemId = middle[0].item.id;
  for (const e of middle) {
    assert.equal(e.output_index, 0);
    if (e.type !== 'response.output_item.added' && e.type !== 'response.output_item.done') {
      assert.equal(e.item_id, itemId);
      assert.equal(e.content_index, 0);
    }
  }
  for (const d of deltas) assert.equal(d.type, 'response.output_text.delta');
  const text = deltas.map((d) => d.delta).join('');
  assert.equal(middle.at(-3).text, text);
  assert.deepEqual(comparable(last.response), comparable(whole));

  const helper = client.responses.stream(hello);
  const final = await helper.finalResponse();
  assert.deepEqual(comparable(final), comparable(whole));
  assert.equal(final.output_text, whole.output_text);
});

test('a repeated request reports its prompt as cached', async () => {
  const request = { ...hello, instructions: 'Cache me, please.', max_output_tokens: 4 };
  const first = await client.responses.create(request);
  const again = await client.responses.create(request);
  assert.equal(again.usage.input_tokens, first.usage.input_tokens);
  assert.ok(again.usage.input_tokens_details.cached_tokens > 0, JSON.stringify(again.usage));
  assert.ok(again.usage.input_tokens_details.cached_tokens >= again.usage.input_tokens - 1, JSON.stringify(again.usage));
});

// A schema every reply finishes in a few tokens: enums and booleans only.
const shapeSchema = {
  type: 'object',
  properties: {
    shape: { type: 'string', enum: ['circle', 'square', 'triangle'] },
    filled: { type: 'boolean' },
    colors: { type: 'array', items: { type: 'string', enum: ['red', 'green', 'blue'] }, maxItems: 3 },
  },
  required: ['shape', 'filled', 'colors'],
  additionalProperties: false,
};

test('text.format json_schema gives JSON that parses and the schema accepts', async () => {
  const { default: Ajv } = await import('ajv');
  const validate = new Ajv({ strict: true }).compile(shapeSchema);
  for (const temperature of [0, 0.9]) {
    const r = await client.responses.create({
      model: 'tinycode', input: 'Describe a shape as JSON.', max_output_tokens: 200, temperature,
      text: { format: { type: 'json_schema', name: 'shape', strict: true, schema: shapeSchema } },
    });
    assert.equal(r.status, 'completed', r.output_text);
    const value = JSON.parse(r.output_text);
    assert.ok(validate(value), `${JSON.stringify(validate.errors)} for ${r.output_text}`);
    assert.deepEqual(Object.keys(value), Object.keys(shapeSchema.properties), 'properties in the schema order');
    assert.equal(r.text.format.name, 'shape');
  }
});

const weatherTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city now',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};
const forced = {
  model: 'gpt-5-codex',
  input: 'Weather in Oslo?',
  // Tools this server cannot run are left out, not refused (Codex sends them).
  tools: [weatherTool, { type: 'web_search' }],
  tool_choice: { type: 'function', name: 'get_weather' },
  parallel_tool_calls: false,
  max_output_tokens: 160,
  temperature: 0,
};

test('a forced function call is a function_call item, its streamed arguments join, and its output is answered', async () => {
  const whole = await toolClient.responses.create(forced);
  assert.equal(whole.status, 'completed', JSON.stringify(whole));
  assert.equal(whole.model, 'gpt-5-codex');
  const call = whole.output.find((item) => item.type === 'function_call');
  assert.ok(call, JSON.stringify(whole.output));
  assert.match(call.id, /^fc_/);
  assert.match(call.call_id, /^call_/);
  assert.equal(call.name, 'get_weather');
  assert.equal(call.status, 'completed');
  assert.equal(typeof JSON.parse(call.arguments).city, 'string');

  const stream = toolClient.responses.stream(forced);
  const pieces = [];
  let done;
  for await (const event of stream) {
    if (event.type === 'response.function_call_arguments.delta') pieces.push(event.delta);
    if (event.type === 'response.function_call_arguments.done') done = event.arguments;
  }
  const final = await stream.finalResponse();
  const streamed = final.output.find((item) => item.type === 'function_call');
  // The arguments stream as the model writes them, a token or so a piece.
  assert.ok(pieces.length > 1, JSON.stringify(pieces));
  assert.equal(pieces.join(''), streamed.arguments);
  assert.equal(done, streamed.arguments);
  assert.deepEqual(JSON.parse(streamed.arguments), JSON.parse(call.arguments));

  const answer = await toolClient.responses.create({
    ...forced,
    tool_choice: 'auto',
    max_output_tokens: 16,
    input: [
      { role: 'user', content: forced.input },
      ...whole.output,
      { type: 'function_call_output', call_id: call.call_id, output: '{"celsius": 21}' },
    ],
  });
  assert.ok(['completed', 'incomplete'].includes(answer.status));
  assert.ok(answer.output.length >= 1);
  assert.ok(answer.usage.input_tokens > whole.usage.input_tokens);
  // The conversation so far is the earlier prompt and reply: the cache resumes it.
  assert.ok(answer.usage.input_tokens_details.cached_tokens > 0, JSON.stringify(answer.usage));
});

test('reasoning.effort reaches the template as enable_thinking, and the reply splits its thoughts out', async () => {
  const request = { model: 'toolcode', input: 'What is 2 + 2?', max_output_tokens: 32, temperature: 0 };
  const thinking = await toolClient.responses.create({ ...request, reasoning: { effort: 'low', summary: 'auto' } });
  const plain = await toolClient.responses.create({ ...request, reasoning: { effort: 'none' } });
  // Qwen3's template closes an empty thought in the prompt when thinking is off.
  assert.ok(plain.usage.input_tokens > thinking.usage.input_tokens, `${plain.usage.input_tokens} vs ${thinking.usage.input_tokens}`);
  assert.equal(thinking.reasoning.effort, 'low');
  for (const r of [thinking, plain]) {
    for (const item of r.output) assert.ok(['reasoning', 'message'].includes(item.type), JSON.stringify(item));
    assert.ok(r.usage.output_tokens_details.reasoning_tokens <= r.usage.output_tokens);
  }
  assert.equal(plain.usage.output_tokens_details.reasoning_tokens, 0);
});

test('a request shaped as Codex sends it streams to response.completed', async () => {
  const stream = await toolClient.responses.create({
    model: 'gpt-5-codex',
    instructions: 'You are a coding agent.',
    input: [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Sandbox: read-only.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List the files.' }] },
    ],
    tools: [
      { type: 'function', name: 'shell', description: 'Runs a command', strict: false,
        parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } },
          required: ['command'], additionalProperties: false } },
      { type: 'local_shell' },
      { type: 'web_search' },
      { type: 'custom', name: 'apply_patch', description: 'Patches files', format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' } },
    ],
    tool_choice: 'auto', parallel_tool_calls: false, reasoning: { effort: 'medium', summary: 'auto' },
    store: false, stream: true, include: ['reasoning.encrypted_content'], prompt_cache_key: 'session-1',
    text: { verbosity: 'low' }, max_output_tokens: 24, temperature: 0,
  });
  let last;
  for await (const event of stream) last = event;
  assert.ok(['response.completed', 'response.incomplete'].includes(last.type), JSON.stringify(last));
  assert.deepEqual(last.response.tools.map((t) => t.name), ['shell']);
});

test('a response is the same with Recall off, on (its repeat drafted from the record) and read-only', async () => {
  // A prompt tinycode answers at length, so its reply is long enough to copy.
  // return_token_ids (this server's extension) puts the reply's ids beside it.
  const request = {
    model: 'tinycode', input: 'Explain binary search in Python code', max_output_tokens: 48, temperature: 0,
    return_token_ids: true,
  };
  const reference = await client.responses.create(request);
  assert.equal(reference.token_ids.length, reference.usage.output_tokens);
  const first = await recallClient.responses.create(request);
  await recallReport(recallServer, (r) => r.adds >= 1);
  const stream = recallClient.responses.stream(request);
  let completed;  // the final event's response (incomplete when max_output_tokens cuts it)
  for await (const event of stream) {
    if (['response.completed', 'response.incomplete'].includes(event.type)) completed = event.response;
  }
  const again = await stream.finalResponse();
  const report = await recallReport(recallServer, (r) => r.adds >= 2);
  assert.ok(report.tokens_landed > 0, `the repeat landed no copied token: ${JSON.stringify(report)}`);
  for (const r of [first, again]) assert.deepEqual(comparable(r), comparable(reference));
  for (const r of [first, completed]) assert.deepEqual(r.token_ids, reference.token_ids);

  const readOnly = await startServer(['--recall-read-only', '--recall-dir', record.path]);
  try {
    const client = new OpenAI({ baseURL: `${readOnly.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const fromReadOnly = await client.responses.create(request);
    assert.deepEqual(comparable(fromReadOnly), comparable(reference));
    assert.deepEqual(fromReadOnly.token_ids, reference.token_ids);
  } finally {
    assert.equal(await readOnly.stop(), 0, readOnly.output());
  }
});

// A 400 in OpenAI's shape whose param and message name `field`.
function invalid(field, param = field) {
  return (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === param &&
    e.message.includes(field);
}

test('bad input is a 400 naming the field', async () => {
  await assert.rejects(client.responses.create({ ...hello, input: 42 }), invalid('input'));
  await assert.rejects(client.responses.create({ ...hello, previous_response_id: 'resp_123' }),
    invalid('previous_response_id'));
  await assert.rejects(client.responses.create({ ...hello, input: [{ type: 'item_reference', id: 'x' }] }),
    invalid('input[0].type', 'input'));
  await assert.rejects(client.responses.create({ ...hello, tool_choice: { type: 'function', name: 'missing' } }),
    invalid('tool_choice'));
});
