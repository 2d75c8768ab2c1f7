// @ts-check
// Unit tests of svc-client against a fake svc that records every request.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import util from 'node:util';

import { SvcApiError, SvcClient } from 'svc-client';

import { closedPort, eventStream, sse, startFake } from './fake-server.js';

const KEY = 'svc_unit-test-key-4f9a2c81d7e6';

/** @param {import('node:http').IncomingHttpHeaders} h */
function svcHeaders(h) {
  return Object.keys(h).filter((k) => k.startsWith('x-svc-'));
}

describe('options', () => {
  test('defaults: baseUrl on port 4100, app default-app, no agent or subject', () => {
    const c = new SvcClient();
    assert.equal(c.baseUrl, 'http://localhost:4100');
    assert.equal(c.app, 'default-app');
    assert.equal(c.agent, undefined);
    assert.equal(c.subject, undefined);
  });

  test('baseUrl, app, agent and subject are readable as given; trailing slashes are stripped', () => {
    const c = new SvcClient({ baseUrl: 'http://svc.internal:8080/gw///', app: 'billing', agent: 'triage-bot', subject: 'u-42' });
    assert.equal(c.baseUrl, 'http://svc.internal:8080/gw');
    assert.equal(c.app, 'billing');
    assert.equal(c.agent, 'triage-bot');
    assert.equal(c.subject, 'u-42');
  });

  test('requests go to the stripped baseUrl', async (t) => {
    const fake = await startFake(t);
    const c = new SvcClient({ baseUrl: fake.url + '//' });
    await c.savings();
    assert.equal(fake.requests()[0].path, '/api/v1/savings');
  });

  test('the API key cannot be read back from the client', () => {
    const c = new SvcClient({ apiKey: KEY });
    assert.equal('apiKey' in c, false);
    // @ts-expect-error: apiKey is not a property of the client
    assert.equal(c.apiKey, undefined);
    assert.ok(!Object.getOwnPropertyNames(c).some((k) => /key/i.test(k)));
    assert.ok(!JSON.stringify(c).includes(KEY));
    assert.ok(!util.inspect(c, { showHidden: true, depth: 10 }).includes(KEY));
    assert.ok(!Object.values(c).some((v) => v === KEY));
  });
});

describe('headers', () => {
  test('Authorization: Bearer <apiKey> on every request', async (t) => {
    const fake = await startFake(t, () => ({ body: {} }));
    const c = new SvcClient({ baseUrl: fake.url, apiKey: KEY });
    await c.chat({ model: 'm', messages: [] });
    await c.trace('run_1', 'note', {});
    await c.feedback('run_1', 1);
    await c.fetchSom('https://example.com/');
    await c.web.openSession('https://example.com/');
    await c.web.act('ws_1', { action: 'click', target: 'e_1' });
    await c.web.closeSession('ws_1');
    await c.web.listSessions();
    await c.savings();
    await c.patterns();
    await c.artifacts();
    await c.artifactDetail('art_1');
    await c.runDetail('run_1');
    await c.cacheStats();
    await c.learningTick();
    await c.promoteArtifact('art_1');
    await c.toolCacheCheck('t', {});
    await c.toolCacheStore('t', {}, 1);
    const reqs = fake.requests();
    assert.equal(reqs.length, 18);
    for (const r of reqs) assert.equal(r.headers.authorization, `Bearer ${KEY}`, `${r.method} ${r.path}`);
  });

  test('no Authorization header without an apiKey', async (t) => {
    const fake = await startFake(t);
    const c = new SvcClient({ baseUrl: fake.url });
    await c.chat({ model: 'm', messages: [] });
    await c.savings();
    for (const r of fake.requests()) assert.equal(r.headers.authorization, undefined);
  });

  test('chat sends X-Svc-App (default-app by default), X-Svc-Agent and X-Svc-Subject', async (t) => {
    const fake = await startFake(t);
    await new SvcClient({ baseUrl: fake.url }).chat({ model: 'm', messages: [] });
    await new SvcClient({ baseUrl: fake.url, app: 'billing', agent: 'triage-bot', subject: 'u-42' }).chat({
      model: 'm',
      messages: [],
    });
    const [plain, named] = fake.requests();
    assert.equal(plain.headers['x-svc-app'], 'default-app');
    assert.deepEqual(svcHeaders(plain.headers), ['x-svc-app'], 'no agent or subject header when unset');
    assert.equal(named.headers['x-svc-app'], 'billing');
    assert.equal(named.headers['x-svc-agent'], 'triage-bot');
    assert.equal(named.headers['x-svc-subject'], 'u-42');
  });

  test('identity headers go on chat only', async (t) => {
    const fake = await startFake(t);
    const c = new SvcClient({ baseUrl: fake.url, app: 'billing', agent: 'triage-bot', subject: 'u-42' });
    await c.trace('run_1', 'note', {});
    await c.toolCacheCheck('t', {});
    await c.savings();
    for (const r of fake.requests()) assert.deepEqual(svcHeaders(r.headers), [], `${r.method} ${r.path}`);
  });

  test('a body is JSON with Content-Type application/json; a request without one has neither', async (t) => {
    const fake = await startFake(t);
    const c = new SvcClient({ baseUrl: fake.url });
    await c.trace('run_1', 'note', { a: 1 });
    await c.savings();
    await c.learningTick();
    const [withBody, get, tick] = fake.requests();
    assert.equal(withBody.headers['content-type'], 'application/json');
    assert.equal(get.headers['content-type'], undefined);
    assert.equal(get.raw, '');
    assert.equal(tick.headers['content-type'], undefined);
    assert.equal(tick.raw, '');
  });
});

describe('chat', () => {
  const completion = {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content: 'billing' }, finish_reason: 'stop' }],
  };

  test('POST /v1/chat/completions with stream forced false', async (t) => {
    const fake = await startFake(t, () => ({ body: completion }));
    const c = new SvcClient({ baseUrl: fake.url });
    const messages = [{ role: 'user', content: 'I was charged twice.' }];
    const request = /** @type {any} */ ({
      model: 'gpt-4o-mini',
      messages,
      temperature: 0,
      response_format: { type: 'json_object' },
      stream: true,
    });
    await c.chat(request);
    await c.chat({ model: 'gpt-4o-mini', messages });
    const [full, bare] = fake.requests();
    assert.equal(full.method, 'POST');
    assert.equal(full.path, '/v1/chat/completions');
    assert.deepEqual(full.body, {
      model: 'gpt-4o-mini',
      messages,
      temperature: 0,
      response_format: { type: 'json_object' },
      stream: false,
    });
    assert.deepEqual(bare.body, { model: 'gpt-4o-mini', messages, stream: false });
  });

  test('returns content, runId and route from the answer, and the raw body', async (t) => {
    const fake = await startFake(t, () => ({
      body: completion,
      headers: { 'x-svc-run-id': 'run_abc', 'x-svc-route': 'exact_cache' },
    }));
    const res = await new SvcClient({ baseUrl: fake.url }).chat({ model: 'm', messages: [] });
    assert.deepEqual(res, { content: 'billing', toolCalls: [], runId: 'run_abc', route: 'exact_cache', raw: completion });
  });

  test("fallbacks: content '', toolCalls [], runId '', route 'live'", async (t) => {
    const bodies = [
      {},
      { choices: [] },
      { choices: [{ message: {} }] },
      { choices: [{ message: { role: 'assistant', content: null, tool_calls: [] } }] },
      { choices: [{ message: { role: 'assistant', content: null, tool_calls: null } }] },
    ];
    let i = 0;
    const fake = await startFake(t, () => ({ body: bodies[i++] }));
    const c = new SvcClient({ baseUrl: fake.url });
    for (const body of bodies) {
      const res = await c.chat({ model: 'm', messages: [] });
      assert.deepEqual(res, { content: '', toolCalls: [], runId: '', route: 'live', raw: body });
    }
  });

  test('a policy block (403) throws with the verdict in the message', async (t) => {
    const blocked = {
      error: { message: 'blocked by policy: no-secrets', type: 'policy_error', param: null, code: 'policy_denied' },
      verdict: { decision: 'deny', rules: [{ id: 'no-secrets', effect: 'deny', reason: 'a key' }] },
    };
    const fake = await startFake(t, () => ({ status: 403, body: blocked, headers: { 'x-svc-route': 'blocked' } }));
    const c = new SvcClient({ baseUrl: fake.url });
    await assert.rejects(c.chat({ model: 'm', messages: [] }), (err) => {
      assert.ok(err instanceof SvcApiError);
      assert.equal(err.status, 403);
      assert.equal(err.message, `Svc-API POST /v1/chat/completions failed: 403 Forbidden — ${JSON.stringify(blocked)}`);
      return true;
    });
  });

  test('chat drops the stream_options of a streamed request, which svc refuses unstreamed', async (t) => {
    const fake = await startFake(t, () => ({ body: completion }));
    const c = new SvcClient({ baseUrl: fake.url });
    const messages = [{ role: 'user', content: 'hi' }];
    /** @type {import('svc-client').ChatStreamRequest} */
    const streamed = { model: 'm', messages, stream_options: { include_usage: true } };
    await c.chat(streamed);
    assert.deepEqual(fake.requests()[0].body, { model: 'm', messages, stream: false });
  });
});

describe('chat with tools', () => {
  /** @type {import('svc-client').ChatTool[]} */
  const tools = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'The weather in a city.',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    },
  ];
  const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } };

  test('sends tools, tool_choice and the messages of a tool round as given', async (t) => {
    const fake = await startFake(t);
    const c = new SvcClient({ baseUrl: fake.url });
    /** @type {import('svc-client').ChatMessage[]} */
    const messages = [
      { role: 'user', content: 'What is the weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [/** @type {import('svc-client').ToolCall} */ (call)] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"tempC":21}' },
    ];
    /** @type {import('svc-client').ToolChoice[]} */
    const choices = ['auto', 'none', 'required', { type: 'function', function: { name: 'get_weather' } }];
    for (const tool_choice of choices) await c.chat({ model: 'm', messages, tools, tool_choice });
    const sent = fake.requests().map((r) => r.body);
    assert.deepEqual(
      sent.map((b) => b.tool_choice),
      choices,
    );
    for (const body of sent) assert.deepEqual(body, { model: 'm', messages, tools, tool_choice: body.tool_choice, stream: false });
  });

  test('returns the tool calls of the answer, and content "" for its null content', async (t) => {
    const completion = {
      id: 'chatcmpl-2',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }],
    };
    const fake = await startFake(t, () => ({ body: completion, headers: { 'x-svc-run-id': 'run_t', 'x-svc-route': 'live' } }));
    const res = await new SvcClient({ baseUrl: fake.url }).chat({ model: 'm', messages: [{ role: 'user', content: 'weather?' }], tools });
    assert.deepEqual(res, { content: '', toolCalls: [call], runId: 'run_t', route: 'live', raw: completion });
  });

  test('an aborted signal rejects chat with an AbortError', { timeout: 20000 }, async (t) => {
    /** @type {() => void} */
    let arrived = () => {};
    const request = new Promise((resolve) => (arrived = () => resolve(undefined)));
    const fake = await startFake(t, () => {
      arrived();
      return new Promise(() => {}); // svc never answers
    });
    const ctl = new AbortController();
    const pending = new SvcClient({ baseUrl: fake.url }).chat({ model: 'm', messages: [] }, { signal: ctl.signal });
    await request;
    ctl.abort();
    await assert.rejects(pending, { name: 'AbortError' });
  });
});

describe('chatStream', () => {
  /**
   * chunk is a chat.completion.chunk with one choice.
   * @param {Record<string, unknown>} delta
   * @param {string | null} [finish]
   */
  const chunk = (delta, finish = null) => ({
    id: 'chatcmpl-s',
    object: 'chat.completion.chunk',
    created: 1704067200,
    model: 'm',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  const hello = [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Hello' }), chunk({ content: ' there' }), chunk({}, 'stop')];

  /**
   * collect reads a stream to its end.
   * @param {AsyncIterable<import('svc-client').ChatCompletionChunk>} stream
   */
  async function collect(stream) {
    /** @type {import('svc-client').ChatCompletionChunk[]} */
    const out = [];
    for await (const c of stream) out.push(c);
    return out;
  }

  test('POST /v1/chat/completions with stream forced true, identity headers and Accept text/event-stream', async (t) => {
    const fake = await startFake(t, () => ({ body: sse(...hello, '[DONE]'), headers: { 'content-type': 'text/event-stream' } }));
    const c = new SvcClient({ baseUrl: fake.url, apiKey: KEY, app: 'billing', agent: 'triage-bot', subject: 'u-42' });
    const messages = [{ role: 'user', content: 'hi' }];
    const request = /** @type {any} */ ({ model: 'm', messages, stream: false, stream_options: { include_usage: true } });
    await collect(await c.chatStream(request));
    const [r] = fake.requests();
    assert.equal(r.method, 'POST');
    assert.equal(r.path, '/v1/chat/completions');
    assert.deepEqual(r.body, { model: 'm', messages, stream: true, stream_options: { include_usage: true } });
    assert.equal(r.headers.accept, 'text/event-stream');
    assert.equal(r.headers.authorization, `Bearer ${KEY}`);
    assert.equal(r.headers['x-svc-app'], 'billing');
    assert.equal(r.headers['x-svc-agent'], 'triage-bot');
    assert.equal(r.headers['x-svc-subject'], 'u-42');
  });

  test('runId and route come from the headers before any chunk is sent; the chunks follow in order until [DONE]', async (t) => {
    const events = eventStream({ 'x-svc-run-id': 'run_s', 'x-svc-route': 'exact_cache' });
    const fake = await startFake(t, () => events.reply);
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
    assert.equal(stream.runId, 'run_s');
    assert.equal(stream.route, 'exact_cache');
    const usage = { id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [], usage: { total_tokens: 7 } };
    await events.write(sse(...hello, usage, '[DONE]'));
    assert.deepEqual(await collect(stream), [...hello, usage]);
    await events.end();
  });

  test("runId '' and route 'live' when the headers are absent", async (t) => {
    const fake = await startFake(t, () => ({ body: sse('[DONE]'), headers: { 'content-type': 'text/event-stream' } }));
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
    assert.equal(stream.runId, '');
    assert.equal(stream.route, 'live');
    assert.deepEqual(await collect(stream), []);
  });

  test('events split across reads: in a UTF-8 character, between CR and LF, in [DONE]', async (t) => {
    const events = eventStream();
    const fake = await startFake(t, () => events.reply);
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
    const it = stream[Symbol.asyncIterator]();
    const cafe = Buffer.from('data: {"n":2,"t":"café"}\n\n');
    const cut = cafe.indexOf(0xa9); // the second byte of é
    // Each write is sent only after the client gave back the event before
    // it, so the next event is split across reads where the test cuts it.
    await events.write(Buffer.concat([Buffer.from('data: {"n":1}\n\n'), cafe.subarray(0, cut)]));
    assert.deepEqual((await it.next()).value, { n: 1 });
    await events.write(Buffer.concat([cafe.subarray(cut), Buffer.from('data: {"n":3,\r')]));
    assert.deepEqual((await it.next()).value, { n: 2, t: 'café' });
    // The LF after a CR that ended the last read ends no second line: a
    // blank line there would end the event in the middle of its JSON.
    await events.write('\ndata: "m":"x"}\r\n\r\n: keep-alive\n\ndata: [DO');
    assert.deepEqual((await it.next()).value, { n: 3, m: 'x' });
    await events.write('NE]\n\n');
    assert.deepEqual(await it.next(), { done: true, value: undefined });
    await events.end();
  });

  test('comments, keep-alives, id and retry fields, other event types and multi-line data', async (t) => {
    const body = [
      ': connected\n\n',
      'retry: 1000\nid: 7\ndata: {"n":1}\n\n',
      ':\n\n',
      'event: ping\ndata: {"not":"a chunk"}\n\n',
      'data:\n\n',
      'event: message\ndata: {"n":\ndata: 2}\n\n',
      'data:{"n":3}\r\rdata: {"n":4}\r\n\r\n',
      'data: [DONE]\n\n',
    ].join('');
    const fake = await startFake(t, () => ({ body, headers: { 'content-type': 'text/event-stream; charset=utf-8' } }));
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
    assert.deepEqual(await collect(stream), [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
  });

  test('tool-call deltas arrive as they were sent, and add up to the call', async (t) => {
    const args = '{"city":"Oslo","unit":"celsius"}';
    const chunks = [
      chunk({ role: 'assistant', content: null }),
      chunk({ tool_calls: [{ index: 0, id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, 16) } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(16) } }] }),
      chunk({}, 'tool_calls'),
    ];
    const fake = await startFake(t, () => ({ body: sse(...chunks, '[DONE]'), headers: { 'content-type': 'text/event-stream' } }));
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({
      model: 'm',
      messages: [{ role: 'user', content: 'get weather in Oslo' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      tool_choice: 'required',
    });
    const got = await collect(stream);
    /** @type {Array<{id: string, name: string, arguments: string}>} */
    const calls = [];
    for (const c of got) {
      for (const d of c.choices[0].delta.tool_calls ?? []) {
        calls[d.index] ??= { id: '', name: '', arguments: '' };
        if (d.id) calls[d.index].id = d.id;
        if (d.function?.name) calls[d.index].name = d.function.name;
        calls[d.index].arguments += d.function?.arguments ?? '';
      }
    }
    assert.deepEqual(calls, [{ id: 'call_9', name: 'get_weather', arguments: args }]);
    assert.equal(got[got.length - 1].choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(got, chunks);
  });

  test('a non-2xx answer throws an SvcApiError before any stream', async (t) => {
    const blocked = { error: { message: 'blocked by policy: no-secrets', type: 'policy_error', param: null, code: 'policy_denied' } };
    const fake = await startFake(t, () => ({ status: 403, body: blocked, headers: { 'x-svc-route': 'blocked' } }));
    await assert.rejects(new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] }), (err) => {
      assert.ok(err instanceof SvcApiError);
      assert.equal(err.status, 403);
      assert.equal(err.message, `Svc-API POST /v1/chat/completions failed: 403 Forbidden — ${JSON.stringify(blocked)}`);
      return true;
    });
    assert.equal(fake.requests().length, 1, 'no retries');
  });

  test('an error in the stream throws an SvcApiError with the event as its body, after the chunks before it', { timeout: 20000 }, async (t) => {
    const failure = { error: { message: 'the provider failed: reset', type: 'upstream_error', param: null, code: 'upstream_error' } };
    /** @type {Array<[string, string]>} */
    const cases = [
      ['data that is an error object', sse(failure)],
      ['an error event', `event: error\ndata: ${JSON.stringify(failure)}\n\n`],
    ];
    for (const [what, tail] of cases) {
      const events = eventStream();
      const fake = await startFake(t, () => events.reply);
      const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
      await events.write(sse(hello[0], hello[1]) + tail); // and the connection stays open
      /** @type {unknown[]} */
      const got = [];
      await assert.rejects(
        (async () => {
          for await (const c of stream) got.push(c);
        })(),
        (err) => {
          assert.ok(err instanceof SvcApiError, what);
          assert.equal(err.status, 200);
          assert.equal(err.body, JSON.stringify(failure));
          assert.equal(err.message, `Svc-API POST /v1/chat/completions failed: 200 OK — ${JSON.stringify(failure)}`);
          return true;
        },
      );
      assert.deepEqual(got, hello.slice(0, 2), what);
      assert.deepEqual(await events.closed, { ended: false }, `${what}: the client closed the connection`);
    }
  });

  test('the API key never appears in a stream error', async (t) => {
    const events = eventStream();
    const fake = await startFake(t, () => events.reply);
    const stream = await new SvcClient({ baseUrl: fake.url, apiKey: KEY }).chatStream({ model: 'm', messages: [] });
    await events.write(sse({ error: { message: `bad ${KEY}` } }) + `data: {${KEY}\n\n`);
    await assert.rejects(collect(stream), (err) => {
      assert.ok(err instanceof SvcApiError);
      assert.ok(!err.message.includes(KEY) && !err.body.includes(KEY), err.message);
      return true;
    });
  });

  test('a stream that ends before [DONE], or sends data that is not JSON, throws', async (t) => {
    /** @type {Array<[string, RegExp]>} */
    const cases = [
      [sse(hello[0]) + 'data: {"n":', /the event stream ended before data: \[DONE\]$/],
      [sse(hello[0], 'not json', '[DONE]'), /^Svc-API POST \/v1\/chat\/completions sent an event that is not JSON: not json$/],
    ];
    for (const [body, message] of cases) {
      const fake = await startFake(t, () => ({ body, headers: { 'content-type': 'text/event-stream' } }));
      const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
      await assert.rejects(collect(stream), { message });
    }
  });

  test('a 2xx answer that is not an event stream throws', async (t) => {
    const fake = await startFake(t, () => ({ body: { object: 'chat.completion', choices: [] } }));
    await assert.rejects(
      new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] }),
      { message: 'Svc-API POST /v1/chat/completions answered 200 with application/json, not an event stream' },
    );
  });

  test('leaving the loop early closes the connection', { timeout: 20000 }, async (t) => {
    const events = eventStream();
    const fake = await startFake(t, () => events.reply);
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
    await events.write(sse(hello[0], hello[1])); // and no more
    for await (const c of stream) {
      assert.deepEqual(c, hello[0]);
      break;
    }
    assert.deepEqual(await events.closed, { ended: false });
  });

  test('close() closes the connection; a loop then reads nothing', { timeout: 20000 }, async (t) => {
    const events = eventStream();
    const fake = await startFake(t, () => events.reply);
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
    await events.write(sse(hello[0]));
    await stream.close();
    await stream.close();
    assert.deepEqual(await events.closed, { ended: false });
    assert.deepEqual(await collect(stream), []);
  });

  test('close() between two chunks of one read ends the loop', async (t) => {
    const fake = await startFake(t, () => ({ body: sse(...hello, '[DONE]'), headers: { 'content-type': 'text/event-stream' } }));
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
    const got = [];
    for await (const c of stream) {
      got.push(c);
      await stream.close();
    }
    assert.deepEqual(got, [hello[0]]);
  });

  test('close() during a read ends the loop quietly', { timeout: 20000 }, async (t) => {
    const events = eventStream();
    const fake = await startFake(t, () => events.reply);
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
    const it = stream[Symbol.asyncIterator]();
    await events.write(sse(hello[0]));
    assert.deepEqual((await it.next()).value, hello[0]);
    const pending = it.next(); // svc sends nothing more
    await stream.close();
    assert.deepEqual(await pending, { done: true, value: undefined });
    assert.deepEqual(await events.closed, { ended: false });
  });

  test('aborting the signal during a read rejects it with an AbortError and closes the connection', { timeout: 20000 }, async (t) => {
    const events = eventStream();
    const fake = await startFake(t, () => events.reply);
    const ctl = new AbortController();
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] }, { signal: ctl.signal });
    const it = stream[Symbol.asyncIterator]();
    await events.write(sse(hello[0]));
    assert.deepEqual((await it.next()).value, hello[0]);
    const pending = it.next();
    ctl.abort();
    await assert.rejects(pending, { name: 'AbortError' });
    assert.deepEqual(await events.closed, { ended: false });
  });

  test('aborting the signal stops the chunks one read already brought', { timeout: 20000 }, async (t) => {
    const events = eventStream();
    const fake = await startFake(t, () => events.reply);
    const ctl = new AbortController();
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] }, { signal: ctl.signal });
    const it = stream[Symbol.asyncIterator]();
    await events.write(sse(hello[0], hello[1], hello[2]));
    assert.deepEqual((await it.next()).value, hello[0]);
    ctl.abort();
    await assert.rejects(it.next(), { name: 'AbortError' });
    assert.deepEqual(await events.closed, { ended: false });
  });

  test('aborting the signal before svc answers rejects chatStream with an AbortError', { timeout: 20000 }, async (t) => {
    /** @type {() => void} */
    let arrived = () => {};
    const request = new Promise((resolve) => (arrived = () => resolve(undefined)));
    const fake = await startFake(t, () => {
      arrived();
      return new Promise(() => {});
    });
    const ctl = new AbortController();
    const pending = new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] }, { signal: ctl.signal });
    await request;
    ctl.abort();
    await assert.rejects(pending, { name: 'AbortError' });
  });

  test('a stream is read once', async (t) => {
    const fake = await startFake(t, () => ({ body: sse(...hello, '[DONE]'), headers: { 'content-type': 'text/event-stream' } }));
    const stream = await new SvcClient({ baseUrl: fake.url }).chatStream({ model: 'm', messages: [] });
    assert.deepEqual(await collect(stream), hello);
    assert.throws(() => stream[Symbol.asyncIterator](), /a chat stream can be read once/);
  });
});

describe('methods', () => {
  test('trace: POST /api/v1/trace {runId, type, payload}, returns the answer', async (t) => {
    const answer = { event: { seq: 3, type: 'note', hash: 'ab' } };
    const fake = await startFake(t, () => ({ status: 201, body: answer }));
    const res = await new SvcClient({ baseUrl: fake.url }).trace('run_1', 'note', { x: 1 });
    assert.deepEqual(res, answer);
    const [r] = fake.requests();
    assert.equal(r.method, 'POST');
    assert.equal(r.path, '/api/v1/trace');
    assert.deepEqual(r.body, { runId: 'run_1', type: 'note', payload: { x: 1 } });
  });

  test("feedback: POST /api/v1/runs/:id/feedback {type: 'rating', rating, correction}", async (t) => {
    const fake = await startFake(t, () => ({ status: 201, body: { feedback: { id: 'fb_1' } } }));
    const c = new SvcClient({ baseUrl: fake.url });
    const res = await c.feedback('run_1', -1, 'refund');
    await c.feedback('run/2', 1);
    assert.deepEqual(res, { feedback: { id: 'fb_1' } });
    const [withCorrection, plain] = fake.requests();
    assert.equal(withCorrection.method, 'POST');
    assert.equal(withCorrection.path, '/api/v1/runs/run_1/feedback');
    assert.deepEqual(withCorrection.body, { type: 'rating', rating: -1, correction: 'refund' });
    assert.equal(plain.path, '/api/v1/runs/run%2F2/feedback', 'the id is one escaped path segment');
    assert.deepEqual(plain.body, { type: 'rating', rating: 1 });
  });

  test('fetchSom: POST /api/v1/web/fetch {url, bypassCache?}', async (t) => {
    const som = { som: { regions: [], elements: [], meta: {} }, source: 'builtin', cached: false, context: '' };
    const fake = await startFake(t, () => ({ body: som }));
    const c = new SvcClient({ baseUrl: fake.url });
    assert.deepEqual(await c.fetchSom('https://example.com/a'), som);
    await c.fetchSom('https://example.com/b', { bypassCache: true });
    const [plain, bypass] = fake.requests();
    assert.equal(plain.method, 'POST');
    assert.equal(plain.path, '/api/v1/web/fetch');
    assert.deepEqual(plain.body, { url: 'https://example.com/a' });
    assert.deepEqual(bypass.body, { url: 'https://example.com/b', bypassCache: true });
  });

  test('web sessions: open, act, close and list', async (t) => {
    const fake = await startFake(t, (r) => ({ body: { echo: `${r.method} ${r.path}` } }));
    const c = new SvcClient({ baseUrl: fake.url });
    assert.deepEqual(await c.web.openSession('https://example.com/'), { echo: 'POST /api/v1/web/sessions' });
    assert.deepEqual(await c.web.act('ws_1', { action: 'type', target: 'e_q', value: 'boots' }), {
      echo: 'POST /api/v1/web/sessions/ws_1/act',
    });
    await c.web.act('ws_1', { action: 'submit', target: 'r_form_x' });
    assert.deepEqual(await c.web.closeSession('ws_1'), { echo: 'DELETE /api/v1/web/sessions/ws_1' });
    assert.deepEqual(await c.web.listSessions(), { echo: 'GET /api/v1/web/sessions' });
    const [open, type, submit, close, list] = fake.requests();
    assert.deepEqual(open.body, { url: 'https://example.com/' });
    assert.deepEqual(type.body, { action: 'type', target: 'e_q', value: 'boots' });
    assert.deepEqual(submit.body, { action: 'submit', target: 'r_form_x' });
    assert.equal(close.method, 'DELETE');
    assert.equal(close.raw, '');
    assert.equal(list.method, 'GET');
  });

  test('reads: GET savings, artifactDetail, runDetail and cacheStats return the answer as it is', async (t) => {
    const fake = await startFake(t, (r) => ({ body: { path: r.path } }));
    const c = new SvcClient({ baseUrl: fake.url });
    assert.deepEqual(await c.savings(), { path: '/api/v1/savings' });
    assert.deepEqual(await c.artifactDetail('art_1'), { path: '/api/v1/artifacts/art_1' });
    assert.deepEqual(await c.runDetail('run_1'), { path: '/api/v1/runs/run_1' });
    assert.deepEqual(await c.cacheStats(), { path: '/api/v1/cache/stats' });
    for (const r of fake.requests()) assert.equal(r.method, 'GET');
  });

  test('patterns and artifacts unwrap their key', async (t) => {
    const fake = await startFake(t, (r) =>
      r.path === '/api/v1/patterns' ? { body: { patterns: [{ id: 'pat_1' }] } } : { body: { artifacts: [{ id: 'art_1' }] } },
    );
    const c = new SvcClient({ baseUrl: fake.url });
    assert.deepEqual(await c.patterns(), [{ id: 'pat_1' }]);
    assert.deepEqual(await c.artifacts(), [{ id: 'art_1' }]);
    assert.deepEqual(
      fake.requests().map((r) => `${r.method} ${r.path}`),
      ['GET /api/v1/patterns', 'GET /api/v1/artifacts'],
    );
  });

  test('patterns and artifacts return [] when the key is absent', async (t) => {
    const fake = await startFake(t, () => ({ body: {} }));
    const c = new SvcClient({ baseUrl: fake.url });
    assert.deepEqual(await c.patterns(), []);
    assert.deepEqual(await c.artifacts(), []);
  });

  test('learningTick: POST /api/v1/learning/tick returns the report', async (t) => {
    const report = { artifactsSynthesized: 1, promotionsEligible: ['art_1'], autoPromoted: [], runsScanned: 9 };
    const fake = await startFake(t, () => ({ body: report }));
    assert.deepEqual(await new SvcClient({ baseUrl: fake.url }).learningTick(), report);
    const [r] = fake.requests();
    assert.equal(`${r.method} ${r.path}`, 'POST /api/v1/learning/tick');
  });

  test('promoteArtifact: POST /api/v1/artifacts/:id/promote unwraps artifact', async (t) => {
    const fake = await startFake(t, () => ({ body: { artifact: { id: 'art_1', state: 'promoted' } } }));
    const res = await new SvcClient({ baseUrl: fake.url }).promoteArtifact('art_1');
    assert.deepEqual(res, { id: 'art_1', state: 'promoted' });
    const [r] = fake.requests();
    assert.equal(`${r.method} ${r.path}`, 'POST /api/v1/artifacts/art_1/promote');
  });
});

describe('budgets and spend', () => {
  const stored = [{ id: 'support-month', scope: 'app', match: 'support', window: 'month', kind: 'hard', limitUsd: 200 }];

  test('budgets: GET /api/v1/budgets unwraps budgets; an answer without a list is an empty list', async (t) => {
    const listed = [{ ...stored[0], windowStart: '2026-11-01T00:00:00Z', resetsAt: '2026-12-01T00:00:00Z', spent: { usd: 7.25, tokens: 2000, requests: 4, hits: 1 } }];
    let n = 0;
    const fake = await startFake(t, () => (n++ === 0 ? { body: { budgets: listed } } : { body: {} }));
    const c = new SvcClient({ baseUrl: fake.url, apiKey: KEY });
    assert.deepEqual(await c.budgets(), listed);
    assert.deepEqual(await c.budgets(), []);
    const [r] = fake.requests();
    assert.equal(`${r.method} ${r.path}`, 'GET /api/v1/budgets');
    assert.equal(r.headers.authorization, `Bearer ${KEY}`);
    assert.equal(r.raw, '');
  });

  test('setBudgets: PUT /api/v1/budgets {budgets} replaces the list, [] clears it', async (t) => {
    const fake = await startFake(t, (r) => ({ body: { budgets: r.body.budgets.length ? stored : [] } }));
    const c = new SvcClient({ baseUrl: fake.url });
    const list = [{ id: 'support-month', scope: /** @type {const} */ ('app'), match: 'support', window: /** @type {const} */ ('month'), limitUsd: 200 }];
    assert.deepEqual(await c.setBudgets(list), stored);
    assert.deepEqual(await c.setBudgets([]), []);
    const [set, clear] = fake.requests();
    assert.equal(`${set.method} ${set.path}`, 'PUT /api/v1/budgets');
    assert.equal(set.headers['content-type'], 'application/json');
    assert.deepEqual(set.body, { budgets: list });
    assert.deepEqual(clear.body, { budgets: [] });
  });

  test('putBudget: PUT /api/v1/budgets with the budget alone, returning every budget', async (t) => {
    const fake = await startFake(t, () => ({ body: { budgets: stored } }));
    const one = { scope: /** @type {const} */ ('tenant'), window: /** @type {const} */ ('day'), kind: /** @type {const} */ ('soft'), limitTokens: 1000000 };
    assert.deepEqual(await new SvcClient({ baseUrl: fake.url }).putBudget(one), stored);
    const [r] = fake.requests();
    assert.equal(`${r.method} ${r.path}`, 'PUT /api/v1/budgets');
    assert.deepEqual(r.body, one, 'not wrapped in a list');
  });

  test('deleteBudget: DELETE /api/v1/budgets/:id, its id escaped; 204 resolves to undefined', async (t) => {
    const fake = await startFake(t, () => ({ status: 204, body: '' }));
    assert.equal(await new SvcClient({ baseUrl: fake.url }).deleteBudget('app support/day'), undefined);
    const [r] = fake.requests();
    assert.equal(`${r.method} ${r.path}`, 'DELETE /api/v1/budgets/app%20support%2Fday');
    assert.equal(r.raw, '');
  });

  test('deleteBudget: an unknown id throws the 404', async (t) => {
    const fake = await startFake(t, () => ({ status: 404, body: { error: { code: 'not_found', message: 'no budget "x"' } } }));
    await assert.rejects(new SvcClient({ baseUrl: fake.url }).deleteBudget('x'), (err) => {
      assert.ok(err instanceof SvcApiError);
      assert.equal(err.status, 404);
      return true;
    });
  });

  test('spend: GET /api/v1/spend with scope and window when given, none when not', async (t) => {
    const report = {
      scope: 'app', window: 'month', timezone: 'Europe/Paris', windowStart: '2026-11-01T00:00:00+01:00', resetsAt: '2026-12-01T00:00:00+01:00',
      items: [{ key: 'billing', usd: 30, tokens: 9000, requests: 20, hits: 2 }],
    };
    const fake = await startFake(t, () => ({ body: report }));
    const c = new SvcClient({ baseUrl: fake.url });
    assert.deepEqual(await c.spend({ scope: 'app', window: 'month' }), report);
    await c.spend();
    await c.spend({ window: 'hour' });
    assert.deepEqual(
      fake.requests().map((r) => `${r.method} ${r.path}`),
      ['GET /api/v1/spend?scope=app&window=month', 'GET /api/v1/spend', 'GET /api/v1/spend?window=hour'],
    );
  });
});

describe('tool cache', () => {
  test('toolCacheCheck: POST /api/v1/tool-cache/check {toolName, subject, args}', async (t) => {
    const fake = await startFake(t, () => ({ body: { hit: true, result: { temp: 21 } } }));
    const res = await new SvcClient({ baseUrl: fake.url, subject: 'u-42' }).toolCacheCheck('weather', { city: 'Oslo' });
    await new SvcClient({ baseUrl: fake.url }).toolCacheCheck('weather', { city: 'Oslo' });
    assert.deepEqual(res, { hit: true, result: { temp: 21 } });
    const [withSubject, without] = fake.requests();
    assert.equal(`${withSubject.method} ${withSubject.path}`, 'POST /api/v1/tool-cache/check');
    assert.deepEqual(withSubject.body, { toolName: 'weather', subject: 'u-42', args: { city: 'Oslo' } });
    assert.deepEqual(without.body, { toolName: 'weather', args: { city: 'Oslo' } });
  });

  test('toolCacheCheck: a miss is {hit: false}', async (t) => {
    const fake = await startFake(t, () => ({ body: { hit: false } }));
    assert.deepEqual(await new SvcClient({ baseUrl: fake.url }).toolCacheCheck('t', {}), { hit: false });
  });

  test('toolCacheCheck never throws: 500, 401, a dropped connection, a refused one and bad JSON are misses', async (t) => {
    /** @type {import('./fake-server.js').Reply[]} */
    const replies = [{ status: 500, body: { hit: true, result: 1 } }, { status: 401 }, { destroy: true }, { body: 'not json' }];
    let i = 0;
    const fake = await startFake(t, () => replies[i++]);
    const c = new SvcClient({ baseUrl: fake.url });
    for (let n = 0; n < replies.length; n++) assert.deepEqual(await c.toolCacheCheck('t', {}), { hit: false });
    const refused = new SvcClient({ baseUrl: await closedPort() });
    assert.deepEqual(await refused.toolCacheCheck('t', {}), { hit: false });
  });

  test('toolCacheStore: POST /api/v1/tool-cache/store {toolName, subject, args, result, ttlSeconds}', async (t) => {
    const fake = await startFake(t, () => ({ status: 201, body: { stored: true } }));
    const c = new SvcClient({ baseUrl: fake.url, subject: 'u-42' });
    assert.equal(await c.toolCacheStore('weather', { city: 'Oslo' }, { temp: 21 }, 60), true);
    await new SvcClient({ baseUrl: fake.url }).toolCacheStore('weather', { city: 'Oslo' }, { temp: 21 });
    const [full, bare] = fake.requests();
    assert.equal(`${full.method} ${full.path}`, 'POST /api/v1/tool-cache/store');
    assert.deepEqual(full.body, { toolName: 'weather', subject: 'u-42', args: { city: 'Oslo' }, result: { temp: 21 }, ttlSeconds: 60 });
    assert.deepEqual(bare.body, { toolName: 'weather', args: { city: 'Oslo' }, result: { temp: 21 } });
  });

  test('toolCacheStore never throws', async (t) => {
    /** @type {import('./fake-server.js').Reply[]} */
    const replies = [{ status: 500 }, { status: 400 }, { destroy: true }];
    let i = 0;
    const fake = await startFake(t, () => replies[i++]);
    const c = new SvcClient({ baseUrl: fake.url });
    for (let n = 0; n < replies.length; n++) assert.equal(await c.toolCacheStore('t', {}, 1, 60), false);
    assert.equal(await new SvcClient({ baseUrl: await closedPort() }).toolCacheStore('t', {}, 1), false);
  });
});

describe('errors', () => {
  /** @type {Array<[string, (c: SvcClient) => Promise<unknown>, string]>} */
  const throwing = [
    ['chat', (c) => c.chat({ model: 'm', messages: [] }), 'POST /v1/chat/completions'],
    ['trace', (c) => c.trace('run_1', 'note', {}), 'POST /api/v1/trace'],
    ['feedback', (c) => c.feedback('run_1', 1), 'POST /api/v1/runs/run_1/feedback'],
    ['fetchSom', (c) => c.fetchSom('https://example.com/'), 'POST /api/v1/web/fetch'],
    ['web.openSession', (c) => c.web.openSession('https://example.com/'), 'POST /api/v1/web/sessions'],
    ['web.act', (c) => c.web.act('ws_1', { action: 'click', target: 'e_1' }), 'POST /api/v1/web/sessions/ws_1/act'],
    ['web.closeSession', (c) => c.web.closeSession('ws_1'), 'DELETE /api/v1/web/sessions/ws_1'],
    ['web.listSessions', (c) => c.web.listSessions(), 'GET /api/v1/web/sessions'],
    ['savings', (c) => c.savings(), 'GET /api/v1/savings'],
    ['patterns', (c) => c.patterns(), 'GET /api/v1/patterns'],
    ['artifacts', (c) => c.artifacts(), 'GET /api/v1/artifacts'],
    ['artifactDetail', (c) => c.artifactDetail('art_1'), 'GET /api/v1/artifacts/art_1'],
    ['runDetail', (c) => c.runDetail('run_1'), 'GET /api/v1/runs/run_1'],
    ['cacheStats', (c) => c.cacheStats(), 'GET /api/v1/cache/stats'],
    ['learningTick', (c) => c.learningTick(), 'POST /api/v1/learning/tick'],
    ['promoteArtifact', (c) => c.promoteArtifact('art_1'), 'POST /api/v1/artifacts/art_1/promote'],
    ['budgets', (c) => c.budgets(), 'GET /api/v1/budgets'],
    ['setBudgets', (c) => c.setBudgets([]), 'PUT /api/v1/budgets'],
    ['putBudget', (c) => c.putBudget({ scope: 'tenant', window: 'day', limitUsd: 1 }), 'PUT /api/v1/budgets'],
    ['deleteBudget', (c) => c.deleteBudget('b1'), 'DELETE /api/v1/budgets/b1'],
    ['spend', (c) => c.spend({ scope: 'key' }), 'GET /api/v1/spend?scope=key'],
  ];

  for (const [name, call, route] of throwing) {
    test(`${name} throws "Svc-API ${route} failed: …" on a non-2xx, once, without retrying`, async (t) => {
      const body = '{"error":{"code":"internal","message":"internal error"}}';
      const fake = await startFake(t, () => ({ status: 500, body }));
      const c = new SvcClient({ baseUrl: fake.url, apiKey: KEY });
      await assert.rejects(call(c), (err) => {
        assert.ok(err instanceof SvcApiError);
        assert.ok(err instanceof Error);
        assert.equal(err.message, `Svc-API ${route} failed: 500 Internal Server Error — ${body}`);
        assert.equal(err.status, 500);
        assert.equal(`${err.method} ${err.path}`, route);
        return true;
      });
      assert.equal(fake.requests().length, 1, 'no retries');
    });
  }

  test('a 503 is not retried either', async (t) => {
    const fake = await startFake(t, () => ({ status: 503, body: 'busy' }));
    await assert.rejects(new SvcClient({ baseUrl: fake.url }).savings(), /failed: 503 Service Unavailable — busy$/);
    assert.equal(fake.requests().length, 1);
  });

  test('a 700-character body is cut to its first 500 characters', async (t) => {
    const body = 'a'.repeat(490) + '0123456789' + 'b'.repeat(200);
    assert.equal(body.length, 700);
    const fake = await startFake(t, () => ({ status: 502, body }));
    await assert.rejects(new SvcClient({ baseUrl: fake.url }).savings(), (err) => {
      assert.ok(err instanceof Error);
      assert.equal(err.message, `Svc-API GET /api/v1/savings failed: 502 Bad Gateway — ${'a'.repeat(490)}0123456789`);
      return true;
    });
  });

  test('the status text is the one svc sent', async (t) => {
    const fake = await startFake(t, () => ({ status: 429, statusText: 'Slow Down', body: '{}' }));
    await assert.rejects(new SvcClient({ baseUrl: fake.url }).cacheStats(), {
      message: 'Svc-API GET /api/v1/cache/stats failed: 429 Slow Down — {}',
    });
  });

  test('the API key never appears in an error, even when svc echoes it', async (t) => {
    const fake = await startFake(t, (r) => ({ status: 401, body: { error: { message: `bad token ${r.headers.authorization}` } } }));
    const c = new SvcClient({ baseUrl: fake.url, apiKey: KEY });
    await assert.rejects(c.savings(), (err) => {
      assert.ok(err instanceof SvcApiError);
      assert.ok(!err.message.includes(KEY), err.message);
      assert.ok(!err.body.includes(KEY));
      assert.ok(!util.inspect(err, { showHidden: true }).includes(KEY));
      assert.match(err.message, /^Svc-API GET \/api\/v1\/savings failed: 401 Unauthorized — /);
      return true;
    });
  });

  test('a network failure rejects with the network error, untouched by retries', async (t) => {
    const fake = await startFake(t, () => ({ destroy: true }));
    await assert.rejects(new SvcClient({ baseUrl: fake.url }).trace('run_1', 'note', {}), TypeError);
    assert.equal(fake.requests().length, 1);
    await assert.rejects(new SvcClient({ baseUrl: await closedPort(), apiKey: KEY }).savings(), (err) => {
      assert.ok(err instanceof Error);
      assert.ok(!String(err.message).includes(KEY));
      return true;
    });
  });
});

describe('traceTool', () => {
  /**
   * run wraps a tool, calls it once against a fake whose cache check
   * answers hit or miss, and returns the order of what happened.
   * @param {import('node:test').TestContext} t
   * @param {{level?: 0|1|2|3|4, ttl?: number, runId?: string, hit?: boolean}} o
   */
  async function run(t, o) {
    const fake = await startFake(t, (r) => {
      if (r.path === '/api/v1/tool-cache/check') return { body: o.hit ? { hit: true, result: 'cached' } : { hit: false } };
      if (r.path === '/api/v1/tool-cache/store') return { status: 201, body: { stored: true } };
      return { status: 201, body: { event: { seq: 1 } } };
    });
    const c = new SvcClient({ baseUrl: fake.url });
    /** @type {import('svc-client').ToolDefinition<{q: string}, string>} */
    const def = { name: 'lookup', execute: () => (fake.log.push({ marker: 'execute' }), 'fresh') };
    if (o.level !== undefined) def.sideEffectLevel = o.level;
    if (o.ttl !== undefined) def.ttlSeconds = o.ttl;
    const result = await c.traceTool(def)({ q: 'x' }, o.runId ? { runId: o.runId } : undefined);
    const steps = fake.log.map((e) => {
      if ('marker' in e) return e.marker;
      if (e.path === '/api/v1/trace') return e.body.payload.cached ? `${e.body.type} (cached)` : e.body.type;
      return e.path.replace('/api/v1/tool-cache/', 'cache ');
    });
    return { result, steps, fake };
  }

  // Every level with and without a TTL and a run, on a cache miss.
  const R = 'run_1';
  /** @type {Array<[0|1|2|3|4|undefined, number|undefined, string|undefined, string[]]>} */
  const misses = [
    [0, 60, R, ['cache check', 'tool.called', 'execute', 'tool.completed', 'cache store']],
    [0, 60, undefined, ['cache check', 'execute', 'cache store']],
    [0, undefined, R, ['tool.called', 'execute', 'tool.completed']],
    [0, undefined, undefined, ['execute']],
    [1, 60, R, ['cache check', 'tool.called', 'execute', 'tool.completed', 'cache store']],
    [1, 60, undefined, ['cache check', 'execute', 'cache store']],
    [1, undefined, R, ['tool.called', 'execute', 'tool.completed']],
    [1, undefined, undefined, ['execute']],
    [2, 60, R, ['tool.called', 'side_effect.planned', 'execute', 'tool.completed']],
    [2, 60, undefined, ['execute']],
    [2, undefined, R, ['tool.called', 'side_effect.planned', 'execute', 'tool.completed']],
    [2, undefined, undefined, ['execute']],
    [3, 60, R, ['tool.called', 'side_effect.planned', 'execute', 'tool.completed']],
    [3, 60, undefined, ['execute']],
    [3, undefined, R, ['tool.called', 'side_effect.planned', 'execute', 'tool.completed']],
    [3, undefined, undefined, ['execute']],
    [4, 60, R, ['tool.called', 'side_effect.planned', 'execute', 'tool.completed']],
    [4, 60, undefined, ['execute']],
    [4, undefined, R, ['tool.called', 'side_effect.planned', 'execute', 'tool.completed']],
    [4, undefined, undefined, ['execute']],
    // The default level is 3: a TTL does not make it cacheable.
    [undefined, 60, R, ['tool.called', 'side_effect.planned', 'execute', 'tool.completed']],
    [undefined, undefined, undefined, ['execute']],
    // A TTL of 0 or less turns the cache off.
    [0, 0, R, ['tool.called', 'execute', 'tool.completed']],
    [1, -5, undefined, ['execute']],
  ];
  for (const [level, ttl, runId, want] of misses) {
    const name = `level ${level ?? 'default'}, ${ttl === undefined ? 'no ttl' : `ttl ${ttl}`}, ${runId ? 'runId' : 'no runId'}`;
    test(`${name}: ${want.join(' → ')}`, async (t) => {
      const { result, steps } = await run(t, { level, ttl, runId });
      assert.deepEqual(steps, want);
      assert.equal(result, 'fresh');
    });
  }

  // A cache hit returns the cached result without executing.
  /** @type {Array<[0|1, string|undefined, string[]]>} */
  const hits = [
    [0, R, ['cache check', 'tool.completed (cached)']],
    [0, undefined, ['cache check']],
    [1, R, ['cache check', 'tool.completed (cached)']],
    [1, undefined, ['cache check']],
  ];
  for (const [level, runId, want] of hits) {
    test(`level ${level}, ttl 60, ${runId ? 'runId' : 'no runId'}, cache hit: ${want.join(' → ')}`, async (t) => {
      const { result, steps } = await run(t, { level, ttl: 60, runId, hit: true });
      assert.deepEqual(steps, want);
      assert.equal(result, 'cached');
    });
  }

  test('what each trace and cache call carries', async (t) => {
    const { fake } = await run(t, { level: 1, ttl: 90, runId: R });
    const [check, called, completed, store] = fake.requests();
    assert.deepEqual(check.body, { toolName: 'lookup', args: { q: 'x' } });
    assert.deepEqual(called.body, { runId: R, type: 'tool.called', payload: { name: 'lookup', args: { q: 'x' }, sideEffectLevel: 1 } });
    assert.deepEqual(completed.body, { runId: R, type: 'tool.completed', payload: { name: 'lookup', result: 'fresh' } });
    assert.deepEqual(store.body, { toolName: 'lookup', args: { q: 'x' }, result: 'fresh', ttlSeconds: 90 });

    const side = await run(t, { runId: R });
    const [calledDefault, planned] = side.fake.requests();
    assert.deepEqual(calledDefault.body.payload, { name: 'lookup', args: { q: 'x' }, sideEffectLevel: 3 });
    assert.deepEqual(planned.body, { runId: R, type: 'side_effect.planned', payload: { toolName: 'lookup', level: 3, payload: { q: 'x' } } });

    const hit = await run(t, { level: 0, ttl: 60, runId: R, hit: true });
    assert.deepEqual(hit.fake.requests()[1].body, {
      runId: R,
      type: 'tool.completed',
      payload: { name: 'lookup', result: 'cached', cached: true },
    });
  });

  test('the subject goes into the cache calls', async (t) => {
    const fake = await startFake(t, (r) => (r.path.endsWith('/check') ? { body: { hit: false } } : { status: 201 }));
    const tool = new SvcClient({ baseUrl: fake.url, subject: 'u-42' }).traceTool({ name: 'x', sideEffectLevel: 0, ttlSeconds: 5, execute: () => 1 });
    await tool({});
    const [check, store] = fake.requests();
    assert.equal(check.body.subject, 'u-42');
    assert.equal(store.body.subject, 'u-42');
  });

  test('execute gets the args and the context', async (t) => {
    const fake = await startFake(t, () => ({ status: 201 }));
    /** @type {unknown[]} */
    const seen = [];
    const tool = new SvcClient({ baseUrl: fake.url }).traceTool({
      name: 'x',
      execute: (args, ctx) => {
        seen.push(args, ctx);
        return 1;
      },
    });
    await tool({ a: 1 }, { runId: R });
    await tool({ a: 2 });
    assert.deepEqual(seen, [{ a: 1 }, { runId: R }, { a: 2 }, {}]);
  });

  for (const [what, reply] of /** @type {Array<[string, import('./fake-server.js').Reply]>} */ ([
    ['a network failure', { destroy: true }],
    ['a 500', { status: 500, body: { error: { code: 'internal' } } }],
  ])) {
    test(`${what} on cache check counts as a miss`, async (t) => {
      const fake = await startFake(t, (r) => (r.path === '/api/v1/tool-cache/check' ? reply : { status: 201 }));
      let runs = 0;
      const tool = new SvcClient({ baseUrl: fake.url }).traceTool({
        name: 'x',
        sideEffectLevel: 0,
        ttlSeconds: 60,
        execute: () => ++runs,
      });
      assert.equal(await tool({}, { runId: R }), 1);
      assert.equal(runs, 1);
      assert.deepEqual(
        fake.requests().map((r) => r.body?.type ?? r.path),
        ['/api/v1/tool-cache/check', 'tool.called', 'tool.completed', '/api/v1/tool-cache/store'],
      );
    });
  }

  test('an error thrown by execute propagates as the same object, and nothing completes or is stored', async (t) => {
    const fake = await startFake(t, (r) => (r.path.endsWith('/check') ? { body: { hit: false } } : { status: 201 }));
    const boom = new Error('upstream down');
    const tool = new SvcClient({ baseUrl: fake.url }).traceTool({
      name: 'x',
      sideEffectLevel: 0,
      ttlSeconds: 60,
      execute: async () => {
        throw boom;
      },
    });
    await assert.rejects(tool({}, { runId: R }), (err) => err === boom);
    const thrownValue = { not: 'an Error' };
    const sync = new SvcClient({ baseUrl: fake.url }).traceTool({
      name: 'y',
      execute: () => {
        throw thrownValue;
      },
    });
    await assert.rejects(sync({}, { runId: R }), (err) => err === thrownValue);
    assert.deepEqual(
      fake.requests().map((r) => r.body?.type ?? r.path),
      ['/api/v1/tool-cache/check', 'tool.called', 'tool.called', 'side_effect.planned'],
    );
  });

  test('trace failures are swallowed: the tool still runs and returns', async (t) => {
    /** @type {import('./fake-server.js').Reply[]} */
    const replies = [{ status: 500 }, { destroy: true }, { status: 404, body: { error: { code: 'not_found' } } }];
    let i = 0;
    const fake = await startFake(t, () => replies[i++ % replies.length]);
    let runs = 0;
    const tool = new SvcClient({ baseUrl: fake.url }).traceTool({ name: 'x', sideEffectLevel: 4, execute: () => ++runs });
    assert.equal(await tool({}, { runId: R }), 1);
    assert.equal(runs, 1);
    assert.equal(fake.requests().length, 3, 'tool.called, side_effect.planned, tool.completed all attempted');
  });

  test('trace and cache failures against a refused connection are swallowed', async () => {
    const c = new SvcClient({ baseUrl: await closedPort() });
    const tool = c.traceTool({ name: 'x', sideEffectLevel: 1, ttlSeconds: 30, execute: () => 'ok' });
    assert.equal(await tool({}, { runId: R }), 'ok');
  });

  test('a failing store is swallowed', async (t) => {
    const fake = await startFake(t, (r) => (r.path.endsWith('/check') ? { body: { hit: false } } : { status: 500 }));
    const tool = new SvcClient({ baseUrl: fake.url }).traceTool({ name: 'x', sideEffectLevel: 0, ttlSeconds: 30, execute: () => 'ok' });
    assert.equal(await tool({}), 'ok');
    assert.deepEqual(fake.requests().map((r) => r.path), ['/api/v1/tool-cache/check', '/api/v1/tool-cache/store']);
  });

  test('a side-effect level outside 0 to 4 is refused when the tool is defined', () => {
    const c = new SvcClient();
    for (const level of [-1, 5, 1.5, NaN]) {
      assert.throws(
        () => c.traceTool({ name: 'x', sideEffectLevel: /** @type {any} */ (level), execute: () => 1 }),
        RangeError,
      );
    }
  });
});
