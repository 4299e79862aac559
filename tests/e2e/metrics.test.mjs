// GET /metrics read by a real Prometheus text-format parser, and Recall's
// copies seen landing in GET /v1/recall and /metrics after a regenerated request.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { startServer, tempDir } from './server.mjs';

let server;
let dir;

before(async () => {
  dir = tempDir();
  server = await startServer(['--recall-dir', `${dir.path}/record`]);
});

after(async () => {
  assert.equal(await server.stop(), 0, server.output());
  dir.remove();
});

async function post(path, body) {
  const r = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(r.status, 200, await r.clone().text());
  return r.json();
}

async function scrape() {
  const r = await fetch(`${server.url}/metrics`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  const text = await r.text();
  return { text, families: Object.fromEntries(parsePrometheusTextFormat(text).map((f) => [f.name, f])) };
}

function value(family, labels = {}) {
  const metric = family.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  assert.ok(metric, `${family.name} ${JSON.stringify(labels)}`);
  return Number(metric.value);
}

test('every family parses, is prefixed tensorfold_ and has HELP and TYPE', async () => {
  const { text, families } = await scrape();
  const names = Object.keys(families);
  assert.ok(names.length >= 20, names.join(' '));
  for (const name of names) {
    assert.match(name, /^tensorfold_[a-z0-9_]+$/);
    assert.ok(families[name].help.length > 0, name);
    assert.ok(text.includes(`# TYPE ${name} ${families[name].type.toLowerCase()}`), name);
    if (families[name].type === 'COUNTER') assert.match(name, /_total$/, 'counters end in _total');
    assert.ok(['COUNTER', 'GAUGE', 'HISTOGRAM'].includes(families[name].type), `${name}: typed, not ${families[name].type}`);
  }
  for (const unit of ['tensorfold_recall_disk_bytes', 'tensorfold_recall_memory_bytes']) assert.equal(families[unit].type, 'GAUGE');
  assert.equal(families.tensorfold_time_to_first_token_seconds.type, 'HISTOGRAM');
  assert.equal(families.tensorfold_request_latency_seconds.type, 'HISTOGRAM');
});

test('a regenerated request shows its copies landing in /v1/recall and /metrics', async () => {
  const request = { model: 'tinycode', prompt: 'class LinkedList:\n    def __init__(self):\n', max_tokens: 64, temperature: 0.6, seed: 11 };
  const first = await post('/v1/completions', request);
  // The record's writer adds the request after its reply went out.
  for (let i = 0; i < 2000; i += 1) {
    const { ids } = await (await fetch(`${server.url}/v1/recall`)).json();
    if (ids >= 64) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const before = await scrape();
  const second = await post('/v1/completions', request);
  assert.equal(second.choices[0].text, first.choices[0].text);

  const report = await (await fetch(`${server.url}/v1/recall`)).json();
  assert.equal(report.state, 'writing');
  assert.ok(report.copies_offered >= 1, JSON.stringify(report));
  assert.ok(report.tokens_landed > 0, JSON.stringify(report));

  const after = await scrape();
  const f = after.families;
  assert.equal(value(f.tensorfold_recall_state, { state: 'writing' }), 1);
  assert.equal(value(f.tensorfold_recall_state, { state: 'off' }), 0);
  assert.ok(value(f.tensorfold_recall_disk_bytes) >= report.disk_bytes);
  assert.equal(value(f.tensorfold_recall_disk_bytes) % 4, 0);
  assert.equal(value(f.tensorfold_recall_memory_bytes), report.memory_bytes);
  assert.equal(value(f.tensorfold_recall_chunks), report.chunks);
  let landed = 0;
  let offered = 0;
  for (const match of ['16-31', '32-63', '64+']) {
    landed += value(f.tensorfold_recall_copy_tokens_landed_total, { match });
    offered += value(f.tensorfold_recall_copies_offered_total, { match });
  }
  // Copy outcomes are recorded after their round; counters only grow, so
  // /metrics lies between the report before it and the one after.
  const later = await (await fetch(`${server.url}/v1/recall`)).json();
  assert.ok(landed >= report.tokens_landed && landed <= later.tokens_landed, `${landed} ${report.tokens_landed} ${later.tokens_landed}`);
  assert.ok(offered >= report.copies_offered && offered <= later.copies_offered);
  // Each bucket's copies are split by the stream's copy history; the split
  // adds up to the bucket, in /v1/recall and in /metrics alike.
  let byHistory = 0;
  let afterFirst = 0;
  for (const bucket of later.buckets) {
    const histories = bucket.by_history.map((h) => h.history);
    assert.deepEqual(histories, ['first', 'after_whole', 'after_short']);
    const sum = bucket.by_history.reduce((n, h) => n + h.copies_offered, 0);
    assert.equal(sum, bucket.copies_offered, JSON.stringify(bucket));
    afterFirst += bucket.by_history[1].copies_offered + bucket.by_history[2].copies_offered;
    for (const h of histories) {
      byHistory += value(f.tensorfold_recall_history_copies_offered_total, { match: bucket.match, history: h });
      const p = value(f.tensorfold_recall_copy_landing_probability, { match: bucket.match, history: h });
      assert.ok(p > 0 && p < 1, `${bucket.match} ${h} ${p}`);
    }
  }
  assert.ok(byHistory >= report.copies_offered && byHistory <= later.copies_offered);
  // A 64-token reply copied in more than one piece: every piece after the
  // first was judged by how the one before it landed.
  if (later.copies_offered >= 2) assert.ok(afterFirst >= 1, JSON.stringify(later.buckets));
  assert.ok(later.own_tokens_displaced >= 0 && later.copies_same_as_own >= 0);
  const generated = value(f.tensorfold_generation_tokens_total) - value(before.families.tensorfold_generation_tokens_total);
  assert.equal(generated, second.usage.completion_tokens);
  assert.ok(value(f.tensorfold_rounds_total) > 0);
  const ttft = f.tensorfold_time_to_first_token_seconds.metrics[0];
  assert.ok(Number(ttft.count) >= 2);
  assert.equal(Number(ttft.buckets['+Inf']), Number(ttft.count));
});
