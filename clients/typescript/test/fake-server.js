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
 * @property {(res: http.ServerResponse) => void} [stream] take the response over (see eventStream)
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
    if (reply.stream) {
      reply.stream(res);
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

/**
 * @typedef {object} EventStream
 * @property {Reply} reply the fake's answer: status 200, text/event-stream and the headers given, sent at once
 * @property {(bytes: string | Uint8Array) => Promise<void>} write sends bytes once the answer has begun
 * @property {() => Promise<void>} end ends the answer
 * @property {Promise<{ended: boolean}>} closed settles when the connection is done with: ended is
 *   false when the client closed it before the answer ended
 */

/**
 * eventStream is an answer a test writes piece by piece, in step with what
 * the client has read.
 * @param {Record<string, string>} [headers]
 * @returns {EventStream}
 */
export function eventStream(headers = {}) {
  /** @type {(res: http.ServerResponse) => void} */
  let begun = () => {};
  /** @type {Promise<http.ServerResponse>} */
  const response = new Promise((resolve) => (begun = resolve));
  /** @type {(v: {ended: boolean}) => void} */
  let settle = () => {};
  /** @type {Promise<{ended: boolean}>} */
  const closed = new Promise((resolve) => (settle = resolve));
  return {
    reply: {
      stream: (res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
        res.flushHeaders();
        res.on('close', () => settle({ ended: res.writableEnded }));
        begun(res);
      },
    },
    write: async (bytes) => {
      (await response).write(bytes);
    },
    end: async () => {
      (await response).end();
    },
    closed,
  };
}

/**
 * sse writes each value as one event: objects as JSON, strings as they are.
 * @param {...unknown} values
 */
export function sse(...values) {
  return values.map((v) => `data: ${typeof v === 'string' ? v : JSON.stringify(v)}\n\n`).join('');
}
