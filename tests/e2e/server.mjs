// Starts the real `tensorfold serve` (TF_BINARY, set by ctest) on a free
// loopback port: --port 0, and the port read from its
// "listening on http://HOST:PORT" line.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
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

export async function startServer(args = []) {
  const child = spawn(binary, ['serve', tinycode, '--port', '0', '--threads', '2', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const port = await new Promise((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 120 s:\n${output}`)), 120_000);
    const onData = (data) => {
      output += data.toString();
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
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
