// /tokenize, /detokenize and /apply-template (llama.cpp's shapes) and
// /v1/completions' suffix against tensorfold serve on tinycode: the ids are
// the ones generation reads, the template's prompt is the one a chat
// completion runs, and bad input is a 400 naming the field. tinycode's
// vocabulary has no FIM tokens, so a suffix is refused there; "fimcode"
// (tinycode with its last three vocabulary entries respelled as Qwen's FIM
// tokens) shows the fill-in-the-middle prompt the real binary runs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, tempDir, tinycode } from './server.mjs';

let server;
let client;
let fimDir;
let fimServer;
let fimClient;

// DIR/fimcode: tinycode with its last three vocabulary entries (rare code
// fragments) taken as <|fim_prefix|>, <|fim_middle|>, <|fim_suffix|>, as a
// Qwen coder vocabulary has them; the weights are untrained for FIM, so only
// the prompt is checked, not what the model fills in.
function makeFimcode(dir) {
  const model = join(dir, 'fimcode');
  mkdirSync(model);
  for (const file of ['config.json', 'generation_config.json', 'tokenizer_config.json', 'model.safetensors']) {
    copyFileSync(join(tinycode, file), join(model, file));
  }
  const tokenizer = JSON.parse(readFileSync(join(tinycode, 'tokenizer.json'), 'utf8'));
  const last = Math.max(...Object.values(tokenizer.model.vocab));
  const spellings = ['<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>'];
  spellings.forEach((content, k) => tokenizer.added_tokens.push({
    id: last - 2 + k, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
  }));
  writeFileSync(join(model, 'tokenizer.json'), JSON.stringify(tokenizer));
  return model;
}

before(async () => {
  server = await startServer(['--api-key', 'test-key']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'test-key', maxRetries: 0 });
  fimDir = tempDir();
  fimServer = await startServer([], makeFimcode(fimDir.path));
  fimClient = new OpenAI({ baseURL: `${fimServer.url}/v1`, apiKey: 'none', maxRetries: 0 });
});

after(async () => {
  assert.equal(await server.stop(), 0, server.output());
  assert.equal(await fimServer.stop(), 0, fimServer.output());
  fimDir.remove();
});

async function post(path, body, key = 'test-key', url = server.url) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

const messages = [
  { role: 'system', content: 'You write Python.' },
  { role: 'user', content: 'a function that adds two numbers' },
];

test('tokenize and detokenize are each other\'s inverse', async () => {
  const text = 'def add(a, b):\n    return a + b\n';
  const tokens = await post('/tokenize', { content: text });
  assert.equal(tokens.status, 200);
  assert.ok(tokens.body.tokens.length > 3);
  for (const id of tokens.body.tokens) assert.ok(Number.isInteger(id));
  const back = await post('/detokenize', { tokens: tokens.body.tokens });
  assert.deepEqual(back, { status: 200, body: { content: text } });
});

test('with_pieces gives each id with its text', async () => {
  const plain = await post('/tokenize', { content: 'hello world' });
  const pieces = await post('/tokenize', { content: 'hello world', with_pieces: true });
  assert.deepEqual(pieces.body.tokens.map((t) => t.id), plain.body.tokens);
  assert.equal(pieces.body.tokens.map((t) => t.piece).join(''), 'hello world');
});

test('a completion\'s prompt tokens are the ids /tokenize gives for its prompt', async () => {
  const prompt = 'def fibonacci(n):';
  const tokens = await post('/tokenize', { content: prompt, add_special: true });
  const completion = await client.completions.create({ model: 'tinycode', prompt, max_tokens: 1 });
  assert.equal(completion.usage.prompt_tokens, tokens.body.tokens.length);
});

test('apply-template gives the prompt a chat completion reads', async () => {
  const applied = await post('/apply-template', { messages });
  assert.equal(applied.status, 200);
  assert.ok(applied.body.prompt.includes('You write Python.'));
  const tokens = await post('/tokenize', { content: applied.body.prompt });
  const chat = await client.chat.completions.create({ model: 'tinycode', messages, max_tokens: 1 });
  assert.equal(chat.usage.prompt_tokens, tokens.body.tokens.length);
});

test('a suffix on a model without FIM tokens is a 400 naming suffix', async () => {
  await assert.rejects(
    client.completions.create({ model: 'tinycode', prompt: 'def add(a, b):\n', suffix: '\nprint(add(1, 2))\n', max_tokens: 8 }),
    (error) => error.status === 400 && error.param === 'suffix' && /fill-in-the-middle/.test(error.message),
  );
});

test('bad input on each route is a 400 naming the field', async () => {
  const cases = [
    ['/tokenize', {}, 'content'],
    ['/tokenize', { content: 42 }, 'content'],
    ['/tokenize', { content: 'x', with_pieces: 'yes' }, 'with_pieces'],
    ['/detokenize', { tokens: 'abc' }, 'tokens'],
    ['/detokenize', { tokens: [1, -5] }, 'tokens'],
    ['/apply-template', { messages: [] }, 'messages'],
  ];
  for (const [path, body, param] of cases) {
    const answer = await post(path, body);
    assert.equal(answer.status, 400, `${path} ${JSON.stringify(body)}`);
    assert.equal(answer.body.error.param, param, `${path} ${JSON.stringify(body)}`);
  }
});

test('the routes need the API key', async () => {
  const answer = await post('/tokenize', { content: 'x' }, 'wrong-key');
  assert.equal(answer.status, 401);
});

test('a suffix on a model with FIM tokens runs prefix, suffix, middle in Qwen\'s order', async () => {
  const prefix = 'def add(a, b):\n    ';
  const suffix = '\n\nprint(add(1, 2))\n';
  const idOf = async (spelling) => (await post('/tokenize', { content: spelling }, 'none', fimServer.url)).body.tokens;
  const plain = async (text) => (await post('/tokenize', { content: text, parse_special: false }, 'none', fimServer.url)).body.tokens;
  const [fimPrefix] = await idOf('<|fim_prefix|>');
  const [fimSuffix] = await idOf('<|fim_suffix|>');
  const [fimMiddle] = await idOf('<|fim_middle|>');
  const completion = await fimClient.completions.create({
    model: 'fimcode', prompt: prefix, suffix, max_tokens: 4, temperature: 0, return_token_ids: true,
  });
  const expected = [fimPrefix, ...(await plain(prefix)), fimSuffix, ...(await plain(suffix)), fimMiddle];
  assert.deepEqual(completion.choices[0].prompt_token_ids, expected);
  assert.equal(completion.usage.prompt_tokens, expected.length);
  assert.ok(completion.usage.completion_tokens >= 1);
});
