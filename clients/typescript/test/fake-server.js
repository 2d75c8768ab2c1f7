// @ts-check
// A fake svc for the unit tests: an HTTP server on 127.0.0.1 that records
// every request and answers with whatever the test's handler says.

import http from 'node:http';

/**
 * @typedef {object} Recorded
 * @property {string} method
 * @property {string} path
 * @property {http.IncomingHttpHeaders} headers
 * @property {string} raw the body as sent
 * @property {any} body the body parsed as JSON (undefined when empty)
 */

/**
 * @typedef {object} Reply
 * @property {number} [status] default 200
 * @property {string} [statusText]
 * @property {Record<string, string>} [headers]
 * @property {unknown} [body] JSON-encoded unless a string; default {}
 * @property {boolean} [destroy] drop the connection instead of answering
 */

/** @typedef {(req: Recorded) => Reply | undefined | Promise<Reply | undefined>} Handler */

/**
 * @typedef {object} Fake
 * @property {string} url
 * @property {Array<Recorded | {marker: string}>} log every request, and markers the test adds, in order
 * @property {() => Recorded[]} requests the requests alone
 * @property {Handler} handle
 * @property {() => Promise<void>} close
 */

/**
 * startFake starts a fake svc; it is closed when the test ends.
 * @param {import('node:test').TestContext} t
 * @param {Handler} [handle]
 * @returns {Promise<Fake>}
 */
export async function startFake(t, handle = () => undefined) {
  /** @type {Fake['log']} */
  const log = [];
  const server = http.createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    let body;
    try {
      body = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      body = raw;
    }
    /** @type {Recorded} */
    const rec = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, body };
    log.push(rec);
    const reply = (await fake.handle(rec)) ?? {};
    if (reply.destroy) {
      req.socket.destroy();
      return;
    }
    const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
    res.writeHead(reply.status ?? 200, reply.statusText, { 'content-type': 'application/json', ...reply.headers });
    res.end(text);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const addr = /** @type {import('node:net').AddressInfo} */ (server.address());
  /** @type {Fake} */
  const fake = {
    url: `http://127.0.0.1:${addr.port}`,
    log,
    requests: () => /** @type {Recorded[]} */ (log.filter((e) => !('marker' in e))),
    handle,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  t.after(() => fake.close());
  return fake;
}

/**
 * closedPort returns the address of a port nothing listens on: a request
 * there fails at the network level.
 * @returns {Promise<string>}
 */
export async function closedPort() {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const addr = /** @type {import('node:net').AddressInfo} */ (server.address());
  await new Promise((resolve) => server.close(() => resolve(undefined)));
  return `http://127.0.0.1:${addr.port}`;
}
