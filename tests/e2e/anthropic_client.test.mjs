// The official `@anthropic-ai/sdk` client against tensorfold serve:
// /v1/messages whole and streamed (the exact event sequence, read by the
// SDK's own stream helper), count_tokens, a forced tool call and its round
// trip on "toolcode" (tinycode with Qwen3's template), the same reply with
// Recall off and on, keys, model names and Anthropic-shaped errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { makeToolcode, recallReport, startServer, tempDir } from './server.mjs';

let server;      // tinycode with an API key, no model aliases
let client;
let toolDir;
let toolServer;  // toolcode, any model name served (--model-alias '*')
let toolClient;
let record;
let recallServer;
let recallClient;

before(async () => {
  server = await startServer(['--api-key', 'test-key']);
  client = new Anthropic({ baseURL: server.url, apiKey: 'test-key', maxRetries: 0 });
  toolDir = tempDir();
  toolServer = await startServer(['--ctx-size', '1024', '--model-alias', '*'], makeToolcode(toolDir.path));
  toolClient = new Anthropic({ baseURL: toolServer.url, apiKey: 'none', maxRetries: 0 });
  record = tempDir();
  recallServer = await startServer(['--recall', '--recall-dir', record.path, '--log-level', 'debug']);
  recallClient = new Anthropic({ baseURL: recallServer.url, apiKey: 'none', maxRetries: 0 });
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
  system: [{ type: 'text', text: 'You write Python.', cache_control: { type: 'ephemeral' } }],
  messages: [{ role: 'user', content: [{ type: 'text', text: 'a function that adds two numbers' }] }],
  max_tokens: 24,
  temperature: 0,
};

test('messages.create answers a message with text blocks, a stop reason and usage', async () => {
  const m = await client.messages.create({ ...hello, metadata: { user_id: 'someone' } });
  assert.match(m.id, /^msg_[0-9a-f]{24}$/);
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, 'tinycode');
  assert.ok(m.content.length >= 1);
  for (const block of m.content) assert.equal(block.type, 'text');
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
  assert.equal(m.stop_sequence, null);
  assert.ok(m.usage.output_tokens >= 1 && m.usage.output_tokens <= 24);
  assert.ok(m.usage.input_tokens + m.usage.cache_read_input_tokens > 0);
  assert.equal(m.usage.cache_creation_input_tokens, 0);
});

test('a streamed message is the exact event sequence and finalMessage() matches the whole one', async () => {
  const whole = await client.messages.create(hello);
  const stream = client.messages.stream(hello);
  const events = [];
  for await (const event of stream) events.push(event);
  const final = await stream.finalMessage();
  assert.equal(events[0].type, 'message_start');
  assert.deepEqual(events.slice(-2).map((e) => e.type), ['message_delta', 'message_stop']);
  // Between them, each block opens at the next index, has deltas at that
  // index, and closes before the next one opens.
  let open = null;
  let next = 0;
  for (const event of events.slice(1, -2)) {
    if (event.type === 'content_block_start') {
      assert.equal(open, null);
      assert.equal(event.index, next);
      open = next;
      next += 1;
    } else if (event.type === 'content_block_delta') {
      assert.equal(event.index, open);
      assert.equal(event.delta.type, 'text_delta');
    } else {
      assert.equal(event.type, 'content_block_stop');
      assert.equal(event.index, open);
      open = null;
    }
  }
  assert.equal(open, null);
  assert.equal(next, final.content.length);
  assert.deepEqual(final.content, whole.content);
  assert.equal(final.stop_reason, whole.stop_reason);
  assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
});

test('count_tokens is the prompt the same request reads', async () => {
  const { max_tokens: _, temperature: __, ...body } = hello;
  const counted = await client.messages.countTokens({ ...body, system: 'Count me.' });
  const m = await client.messages.create({ ...hello, system: 'Count me.', max_tokens: 2 });
  assert.ok(counted.input_tokens > 0);
  // Anthropic's usage splits the prompt into tokens read afresh and those
  // the prompt cache held.
  assert.equal(m.usage.input_tokens + m.usage.cache_read_input_tokens, counted.input_tokens);
});

test('a repeated request reports its prompt as read from the cache', async () => {
  const request = { ...hello, system: 'Cache me, please.', max_tokens: 4 };
  const first = await client.messages.create(request);
  const again = await client.messages.create(request);
  const prompt = first.usage.input_tokens + first.usage.cache_read_input_tokens;
  assert.equal(again.usage.input_tokens + again.usage.cache_read_input_tokens, prompt);
  assert.ok(again.usage.cache_read_input_tokens >= prompt - 1, JSON.stringify(again.usage));
});

// Claude Code's first system line carries per-request values; left in the
// prompt it would change the first tokens and nothing could be resumed.
test('requests differing only in the billing line read the same prompt, the second from the cache', async () => {
  const withBilling = (line) => ({
    ...hello,
    system: [
      { type: 'text', text: line },
      { type: 'text', text: 'You are a coding agent working in a Python repository. Answer with code only.' },
    ],
    max_tokens: 4,
  });
  const first = withBilling('x-anthropic-billing-header: cc_version=2.0.14.abc; cc_entrypoint=cli; cch=5e1f0;');
  const second = withBilling('x-anthropic-billing-header: cc_version=2.0.14.abc; cc_entrypoint=cli; cch=a93c7;');
  const counted = async ({ max_tokens: _, temperature: __, ...body }) => (await client.messages.countTokens(body)).input_tokens;
  const prompt = await counted(first);
  assert.equal(await counted(second), prompt);
  // Without the line at all, the prompt is the same: it was left out, not kept as some fixed text.
  assert.equal(await counted({ ...first, system: first.system.slice(1) }), prompt);

  const a = await client.messages.create(first);
  assert.equal(a.usage.input_tokens + a.usage.cache_read_input_tokens, prompt);
  const b = await client.messages.create(second);
  assert.equal(b.usage.input_tokens + b.usage.cache_read_input_tokens, prompt);
  assert.ok(b.usage.cache_read_input_tokens >= prompt - 4, JSON.stringify({ prompt, usage: b.usage }));
});

test('the beta route form, its headers and x-api-key are accepted', async () => {
  const m = await client.beta.messages.create({ ...hello, max_tokens: 4, betas: ['interleaved-thinking-2025-05-14'] });
  assert.equal(m.type, 'message');
  const byHeader = new Anthropic({
    baseURL: server.url, maxRetries: 0, defaultHeaders: { 'X-Api-Key': 'test-key', Authorization: null },
  });
  assert.equal((await byHeader.messages.create({ ...hello, max_tokens: 2 })).type, 'message');
  const wrong = new Anthropic({
    baseURL: server.url, maxRetries: 0, defaultHeaders: { 'X-Api-Key': 'guess', Authorization: null },
  });
  await assert.rejects(wrong.messages.create({ ...hello, max_tokens: 2 }),
    (e) => e instanceof Anthropic.AuthenticationError && e.error?.error?.type === 'authentication_error');
});

// Claude Code's own requests: ?beta=true on the route, its version, beta and
// session headers, the key as x-api-key. The SDK here does not add the query.
test('Claude Code\'s request form (?beta=true, its headers) is served on messages and count_tokens', async () => {
  const headers = {
    'content-type': 'application/json',
    'x-api-key': 'test-key',
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
    'X-Claude-Code-Session-Id': '0c6d2f64-6a4c-4a53-9a8e-0f2f0b6f1e7d',
    'anthropic-dangerous-direct-browser-access': 'true',
  };
  const reply = await fetch(`${server.url}/v1/messages?beta=true`, {
    method: 'POST', headers, body: JSON.stringify({ ...hello, max_tokens: 4 }),
  });
  assert.equal(reply.status, 200, await reply.clone().text());
  const m = await reply.json();
  assert.equal(m.type, 'message');
  const { max_tokens: _, temperature: __, ...body } = hello;
  const counted = await fetch(`${server.url}/v1/messages/count_tokens?beta=true`, {
    method: 'POST', headers, body: JSON.stringify(body),
  });
  assert.equal(counted.status, 200, await counted.clone().text());
  assert.equal((await counted.json()).input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
});

test('a stop sequence ends the reply with stop_reason stop_sequence, whole and streamed', async () => {
  const reference = await client.messages.create({ ...hello, max_tokens: 24 });
  const text = reference.content.map((b) => b.text).join('');
  // A piece of the reply past its first few characters: the reply stops
  // before it and names it.
  const stop = text.slice(6, 9);
  assert.equal(stop.length, 3, JSON.stringify(text));
  const request = { ...hello, max_tokens: 24, stop_sequences: ['never appears here', stop] };
  for (const m of [await client.messages.create(request), await client.messages.stream(request).finalMessage()]) {
    assert.equal(m.stop_reason, 'stop_sequence', JSON.stringify(m));
    assert.equal(m.stop_sequence, stop);
    const got = m.content.map((b) => b.text).join('');
    assert.equal(got, text.slice(0, text.indexOf(stop)));
  }
});

// A 400 in Anthropic's shape whose message names `field`.
function invalid(field) {
  return (e) => e instanceof Anthropic.BadRequestError && e.status === 400 && e.error?.type === 'error' &&
    e.error.error.type === 'invalid_request_error' && e.error.error.message.includes(field);
}

test('bad input is a 400 invalid_request_error naming the field', async () => {
  const { max_tokens: _, ...noMax } = hello;
  await assert.rejects(client.messages.create(noMax), invalid('max_tokens'));
  await assert.rejects(client.messages.create({ ...hello, messages: 'hi' }), invalid('messages'));
  await assert.rejects(client.messages.create({ ...hello, messages: [{ role: 'system', content: 'x' }] }),
    invalid('messages[0].role'));
  await assert.rejects(client.messages.create({ ...hello, thinking: { type: 'enabled', budget_tokens: 0 } }),
    invalid('thinking.budget_tokens'));
  const { max_tokens: _m, temperature: _t, ...counted } = hello;
  await assert.rejects(client.messages.countTokens({ ...counted, messages: 'hi' }), invalid('messages'));
  await assert.rejects(client.messages.countTokens({ ...counted, tools: [{ description: 'no name' }] }),
    invalid('tools[0].name'));
});

test('an unknown model is a 404 not_found_error naming it, unless --model-alias takes any name', async () => {
  await assert.rejects(client.messages.create({ ...hello, model: 'claude-haiku-4-5' }),
    (e) => e instanceof Anthropic.NotFoundError && e.error.error.type === 'not_found_error' &&
      e.error.error.message.includes('claude-haiku-4-5'));
  const m = await toolClient.messages.create({ ...hello, model: 'claude-haiku-4-5', max_tokens: 4 });
  assert.equal(m.model, 'claude-haiku-4-5');
});

const tools = [{
  name: 'get_weather',
  description: 'The weather in a city now',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}];
const forced = {
  model: 'claude-sonnet-4-5',
  messages: [{ role: 'user', content: 'Weather in Oslo?' }],
  tools,
  tool_choice: { type: 'tool', name: 'get_weather' },
  max_tokens: 160,
  temperature: 0,
};

test('a forced tool call is a tool_use block, streamed as input_json_delta pieces, and its result answered', async () => {
  const whole = await toolClient.messages.create(forced);
  assert.equal(whole.stop_reason, 'tool_use', JSON.stringify(whole));
  const call = whole.content.find((b) => b.type === 'tool_use');
  assert.match(call.id, /^toolu_[0-9a-f]{24}$/);
  assert.equal(call.name, 'get_weather');
  assert.equal(typeof call.input, 'object');
  assert.equal(typeof call.input.city, 'string');

  const stream = toolClient.messages.stream(forced);
  const pieces = [];
  stream.on('inputJson', (partial) => pieces.push(partial));
  const final = await stream.finalMessage();
  const streamed = final.content.find((b) => b.type === 'tool_use');
  assert.ok(pieces.length >= 1);
  assert.deepEqual(JSON.parse(pieces.join('')), streamed.input);
  assert.deepEqual(streamed.input, call.input);
  assert.equal(final.stop_reason, 'tool_use');

  const answer = await toolClient.messages.create({
    ...forced,
    tool_choice: { type: 'auto' },
    max_tokens: 16,
    messages: [
      ...forced.messages,
      { role: 'assistant', content: whole.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '{"celsius": 21}' }] },
    ],
  });
  assert.equal(answer.role, 'assistant');
  assert.ok(answer.usage.input_tokens + answer.usage.cache_read_input_tokens >
    whole.usage.input_tokens + whole.usage.cache_read_input_tokens);
});

test('tool_choice any forces some tool and none offers none', async () => {
  const any = await toolClient.messages.create({ ...forced, tool_choice: { type: 'any' } });
  assert.equal(any.stop_reason, 'tool_use', JSON.stringify(any));
  assert.equal(any.content.find((b) => b.type === 'tool_use').name, 'get_weather');
  const none = await toolClient.messages.create({ ...forced, tool_choice: { type: 'none' }, max_tokens: 24 });
  assert.notEqual(none.stop_reason, 'tool_use');
  assert.ok(none.content.every((b) => b.type === 'text'), JSON.stringify(none));
});

test('thinking enabled with a budget, and thinking blocks in the history, are taken through the SDK', async () => {
  const m = await toolClient.messages.create({
    ...hello, model: 'claude-sonnet-4-5', max_tokens: 24, thinking: { type: 'enabled', budget_tokens: 1024 },
  });
  assert.equal(m.type, 'message');
  const history = await toolClient.messages.create({
    ...hello,
    model: 'claude-sonnet-4-5',
    max_tokens: 8,
    messages: [
      ...hello.messages,
      { role: 'assistant', content: [
        { type: 'thinking', thinking: 'Two numbers in, their sum out.', signature: '' },
        { type: 'text', text: 'def add(a, b):\n    return a + b' },
      ] },
      { role: 'user', content: 'and subtract?' },
    ],
  });
  assert.equal(history.role, 'assistant');
  assert.ok(history.usage.input_tokens + history.usage.cache_read_input_tokens >
    m.usage.input_tokens + m.usage.cache_read_input_tokens);
});

test('a message is the same with Recall off, on (its repeat drafted from the record) and read-only', async () => {
  // A prompt tinycode answers at length, so its reply is long enough to copy.
  // return_token_ids (this server's extension) puts the reply's ids beside
  // it, in the message and in a stream's message_delta.
  const request = {
    model: 'tinycode', max_tokens: 48, temperature: 0, return_token_ids: true,
    messages: [{ role: 'user', content: 'Explain binary search in Python code' }],
  };
  const reference = await client.messages.create(request);
  assert.equal(reference.token_ids.length, reference.usage.output_tokens);
  const first = await recallClient.messages.create(request);
  await recallReport(recallServer, (r) => r.adds >= 1);
  const stream = recallClient.messages.stream(request);
  let streamedIds;
  stream.on('streamEvent', (event) => { if (event.type === 'message_delta') streamedIds = event.token_ids; });
  const again = await stream.finalMessage();
  const report = await recallReport(recallServer, (r) => r.adds >= 2);
  assert.ok(report.tokens_landed > 0, `the repeat landed no copied token: ${JSON.stringify(report)}`);
  const readOnly = await startServer(['--recall-read-only', '--recall-dir', record.path]);
  let fromReadOnly;
  try {
    const client = new Anthropic({ baseURL: readOnly.url, apiKey: 'none', maxRetries: 0 });
    fromReadOnly = await client.messages.create(request);
  } finally {
    assert.equal(await readOnly.stop(), 0, readOnly.output());
  }
  assert.deepEqual(streamedIds, reference.token_ids);
  for (const m of [first, fromReadOnly]) assert.deepEqual(m.token_ids, reference.token_ids);
  for (const m of [first, again, fromReadOnly]) {
    assert.deepEqual(m.content, reference.content);
    assert.equal(m.usage.output_tokens, reference.usage.output_tokens);
    assert.equal(m.stop_reason, reference.stop_reason);
  }
});
