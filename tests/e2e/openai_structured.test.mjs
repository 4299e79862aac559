// Logprobs and structured output through the official `openai`
// npm client: what the client reads is consistent with the tokens chosen,
// streamed chunks carry the same entries as whole bodies, and the entries
// are the same numbers with Recall off and with a record copy landing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { recallReport, startServer, tempDir } from './server.mjs';

let off;
let on;
let record;
let plain;
let recalling;

before(async () => {
  record = tempDir();
  off = await startServer([]);
  on = await startServer(['--recall', '--recall-dir', record.path, '--log-level', 'debug']);
  plain = new OpenAI({ baseURL: `${off.url}/v1`, apiKey: 'none', maxRetries: 0 });
  recalling = new OpenAI({ baseURL: `${on.url}/v1`, apiKey: 'none', maxRetries: 0 });
});

after(async () => {
  assert.equal(await off.stop(), 0, off.output());
  assert.equal(await on.stop(), 0, on.output());
  record.remove();
});

test('completion logprobs: the greedy token heads its alternatives and the tokens spell the text', async () => {
  const c = await plain.completions.create({
    prompt: 'def add(a, b):\n', max_tokens: 12, temperature: 0, logprobs: 3,
  });
  const lp = c.choices[0].logprobs;
  assert.equal(lp.tokens.join(''), c.choices[0].text);
  assert.equal(lp.token_logprobs.length, lp.tokens.length);
  for (let i = 0; i < lp.tokens.length; i += 1) {
    const alternatives = Object.entries(lp.top_logprobs[i]);
    assert.ok(alternatives.length >= 1 && alternatives.length <= 3);
    const best = Math.max(...alternatives.map(([, v]) => v));
    assert.equal(lp.token_logprobs[i], best, `token ${i} is the greedy choice`);
    assert.equal(lp.top_logprobs[i][lp.tokens[i]], lp.token_logprobs[i]);
    assert.ok(lp.token_logprobs[i] <= 0);
  }
  assert.equal(lp.text_offset[0], 0);
});

test('chat logprobs: one entry per token with bytes; streamed chunks carry the same entries', async () => {
  const request = {
    messages: [{ role: 'user', content: 'write a python function' }],
    max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 2,
  };
  const whole = await plain.chat.completions.create(request);
  const content = whole.choices[0].logprobs.content;
  assert.ok(content.length > 0, 'tinycode answers this prompt with text');
  assert.equal(content.map((e) => e.token).join(''), whole.choices[0].message.content);
  for (const entry of content) {
    // A token that is part of a character shows U+FFFD; its bytes stay exact.
    if (!entry.token.includes('\uFFFD')) assert.deepEqual(entry.bytes, [...Buffer.from(entry.token, 'utf8')]);
    assert.equal(entry.top_logprobs.length, 2);
    assert.equal(entry.top_logprobs[0].logprob, entry.logprob);
  }
  const stream = await plain.chat.completions.create({ ...request, stream: true });
  const streamed = [];
  for await (const chunk of stream) {
    for (const choice of chunk.choices) streamed.push(...(choice.logprobs?.content ?? []));
  }
  assert.deepEqual(streamed, content);
});

test('logprobs are the same numbers with Recall off, on an empty record and with a copy landing', async () => {
  const request = {
    prompt: 'class Stack:\n    def __init__(self):\n', max_tokens: 48, temperature: 0.7, seed: 21, logprobs: 2,
  };
  const reference = await plain.completions.create(request);
  const first = await recalling.completions.create(request);
  await recallReport(on, (r) => r.adds >= 1);
  const again = await recalling.completions.create(request);
  const report = await recallReport(on, (r) => r.adds >= 2);
  assert.ok(report.tokens_landed > 0, `the repeat landed no copied token: ${JSON.stringify(report)}`);
  for (const c of [first, again]) {
    assert.equal(c.choices[0].text, reference.choices[0].text);
    assert.deepEqual(c.choices[0].logprobs, reference.choices[0].logprobs);
  }
});

test('bad logprobs requests are 400s naming the field', async () => {
  await assert.rejects(
    plain.completions.create({ prompt: 'x', max_tokens: 2, logprobs: 21 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'logprobs',
  );
  await assert.rejects(
    plain.chat.completions.create({ messages: [{ role: 'user', content: 'x' }], top_logprobs: 2 }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'top_logprobs',
  );
});

// A schema every reply can finish inside 256 tokens: bounded strings and
// arrays, so a reply that stops is always whole.
const pointSchema = {
  type: 'object',
  properties: {
    label: { type: 'string', maxLength: 16 },
    x: { type: 'integer' },
    y: { type: 'number' },
    tags: { type: 'array', items: { type: 'string', enum: ['red', 'green', 'blue'] }, maxItems: 3 },
    visible: { type: 'boolean' },
  },
  required: ['label', 'x', 'y', 'tags', 'visible'],
  additionalProperties: false,
};
const pointFormat = { type: 'json_schema', json_schema: { name: 'point', strict: true, schema: pointSchema } };

test('json_schema with strict: every reply parses and the ajv validator accepts it', async () => {
  const { default: Ajv } = await import('ajv');
  const validate = new Ajv({ strict: true }).compile(pointSchema);
  const prompts = ['A point on the plane as JSON.', 'def plot(points):\n', 'Describe the cursor.'];
  for (const [i, prompt] of prompts.entries()) {
    for (const seed of [1, 2]) {
      const c = await plain.chat.completions.create({
        messages: [{ role: 'user', content: prompt }],
        max_tokens: 256, temperature: 0.9, seed: seed + 10 * i, response_format: pointFormat,
      });
      assert.equal(c.choices[0].finish_reason, 'stop', c.choices[0].message.content);
      const value = JSON.parse(c.choices[0].message.content);
      assert.ok(validate(value), `${JSON.stringify(validate.errors)} for ${c.choices[0].message.content}`);
      assert.deepEqual(Object.keys(value), Object.keys(pointSchema.properties), 'properties in the schema order');
    }
  }
});

test('json_object: a greedy reply is one JSON object; a completion can ask for it too', async () => {
  const chat = await plain.chat.completions.create({
    messages: [{ role: 'user', content: 'Give me a point as JSON' }],
    max_tokens: 200, temperature: 0, response_format: { type: 'json_object' },
  });
  assert.equal(chat.choices[0].finish_reason, 'stop');
  const value = JSON.parse(chat.choices[0].message.content);
  assert.equal(typeof value, 'object');
  assert.ok(!Array.isArray(value) && value !== null);
  const completion = await plain.completions.create({
    prompt: 'config = ', max_tokens: 256, temperature: 0, response_format: pointFormat,
  });
  assert.equal(completion.choices[0].finish_reason, 'stop');
  assert.deepEqual(Object.keys(JSON.parse(completion.choices[0].text)), Object.keys(pointSchema.properties));
});

test('a streamed constrained reply joins to the whole one', async () => {
  const request = {
    messages: [{ role: 'user', content: 'A point.' }], max_tokens: 256, temperature: 0.8, seed: 4,
    response_format: pointFormat,
  };
  const whole = await plain.chat.completions.create(request);
  const stream = await plain.chat.completions.create({ ...request, stream: true });
  let content = '';
  let finish = null;
  for await (const chunk of stream) {
    content += chunk.choices[0]?.delta?.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(content, whole.choices[0].message.content);
  assert.equal(finish, 'stop');
});

test('constrained replies are the same tokens with Recall off, on, with a copy landing, and read-only', async () => {
  const request = {
    prompt: 'points = [', max_tokens: 256, temperature: 0.7, seed: 33, response_format: pointFormat,
    return_token_ids: true,
  };
  const reference = await plain.completions.create(request);
  const before = (await recallReport(on, () => true)).adds;
  await recalling.completions.create(request);
  await recallReport(on, (r) => r.adds >= before + 1);
  const landedBefore = (await recallReport(on, () => true)).tokens_landed;
  const again = await recalling.completions.create(request);
  const report = await recallReport(on, (r) => r.adds >= before + 2);
  assert.ok(report.tokens_landed > landedBefore, 'the repeat landed copied tokens');
  assert.equal(again.choices[0].text, reference.choices[0].text);
  assert.deepEqual(again.choices[0].token_ids, reference.choices[0].token_ids);

  const readOnly = await startServer(['--recall-read-only', '--recall-dir', record.path]);
  try {
    const client = new OpenAI({ baseURL: `${readOnly.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const read = await client.completions.create(request);
    assert.deepEqual(read.choices[0].token_ids, reference.choices[0].token_ids);
  } finally {
    assert.equal(await readOnly.stop(), 0, readOnly.output());
  }
});

test('a schema keyword outside the subset is a 400 naming it', async () => {
  await assert.rejects(
    plain.chat.completions.create({
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'string', pattern: '^a+$' } } },
    }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format' && /pattern/.test(e.message),
  );
});
