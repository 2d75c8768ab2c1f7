// @ts-check
// Runs the real svc (bin/svc, built by `make build`) for the integration
// tests: a free port on 127.0.0.1, a temporary database, the plugins from
// bin/plugins, and a wait for /health.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root, three folders above this file. */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * @typedef {object} Svc
 * @property {string} url
 * @property {() => string} output what svc wrote to stderr so far
 * @property {() => Promise<void>} stop
 */

/** @returns {Promise<number>} a port nothing listens on at the moment */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {net.AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

/**
 * startSvc runs bin/svc with env added to its environment and resolves once
 * /health answers.
 * @param {Record<string, string>} [env]
 * @returns {Promise<Svc>}
 */
export async function startSvc(env = {}) {
  const bin = join(repoRoot, 'bin', 'svc');
  const plugins = join(repoRoot, 'bin', 'plugins');
  if (!existsSync(bin) || !existsSync(join(plugins, 'svc-provider-mock'))) {
    throw new Error(`${bin} or its plugins are missing: run \`make build\` first (\`make test-ts\` does)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'svc-client-it-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(bin, [], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      SVC_ADDR: `127.0.0.1:${port}`,
      SVC_DB: join(dir, 'svc.db'),
      SVC_PLUGIN_DIR: plugins,
      SVC_LEARNING_INTERVAL: '0',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr?.on('data', (b) => {
    output = (output + b).slice(-20000);
  });
  /** @type {Promise<number | null>} */
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  let gone = false;
  exited.then(() => (gone = true));

  const stop = async () => {
    if (!gone) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 15000;
  while (Date.now() < deadline) {
    if (gone) break;
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok && /** @type {{ok?: boolean}} */ (await res.json()).ok === true) return { url, output: () => output, stop };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`svc did not become healthy on ${url}:\n${output}`);
}
