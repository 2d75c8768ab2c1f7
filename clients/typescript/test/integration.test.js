// @ts-check
// Integration tests of svc-client against the real svc: bin/svc with the
// mock provider, a temporary database and a bearer token. Every endpoint
// the client calls must answer: a missing route fails its test.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';

import { SvcApiError, SvcClient } from 'svc-client';

import { startSvc } from './svc-process.js';

const TOKEN = 'ts-client-integration-bootstrap-token';
const MODEL = 'gpt-4o-mini';

/**
 * notFound checks that err is svc's 404 for a record it does not have, whose
 * message starts with what: a route svc does not serve is a 404 too, but
 * one that says "no route", and must fail the test.
 * @param {string} what
 * @returns {(err: unknown) => true}
 */
function notFound(what) {
  return (err) => {
    assert.ok(err instanceof SvcApiError, String(err));
    assert.equal(err.status, 404, err.message);
    const body = JSON.parse(err.body);
    assert.equal(body.error.code, 'not_found', err.message);
    assert.ok(body.error.message.startsWith(`${what} not found`), err.message);
    return true;
  };
}

/**
 * elementId finds the id of the element named label in a SOM, or in its
 * context text.
 * @param {import('svc-client').SomSnapshot | undefined} som
 * @param {string} context
 * @param {string} label
 */
function elementId(som, context, label) {
  /** @param {{name?: unknown}} e */
  const named = (e) => typeof e.name === 'string' && e.name.includes(label);
  const el = som?.elements?.find(named) ??
    som?.elements?.find((e) => [e.text, e.label].some((v) => typeof v === 'string' && v.includes(label)));
  if (el) return el.id;
  const line = context.split('\n').find((l) => l.includes(label));
  return line?.match(/\b(e_[A-Za-z0-9_]+)/)?.[1];
}

// A small shop page the web tests fetch, served on 127.0.0.1 and opened to
// svc through SVC_WEB_ALLOW_PRIVATE.
const shop = `<!doctype html><html lang="en"><head><title>Trail Boots</title>
<script>${'var tracking = 1;\n'.repeat(200)}</script><style>${'.x{color:red}\n'.repeat(200)}</style></head>
<body><nav><a href="/">Home</a></nav><main><h1>Trail Boots</h1>
<p class="price" itemprop="price">$120.00</p>
<form method="get" action="/search"><label for="q">Find boots</label><input id="q" name="q" type="text">
<button type="submit">Go</button></form>
<p><a href="/next.html">Next page</a></p></main><footer>Shop footer</footer></body></html>`;
const next = `<!doctype html><html><head><title>Next</title></head><body><main><h1>Second page</h1></main></body></html>`;

describe('svc-client against bin/svc', () => {
  /** @type {import('./svc-process.js').Svc} */
  let svc;
  /** @type {http.Server} */
  let pages;
  let pagesUrl = '';
  /** @type {SvcClient} */
  let client;

  before(async () => {
    pages = http.createServer((req, res) => {
      const body = req.url === '/next.html' ? next : shop;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(body);
    });
    await new Promise((resolve) => pages.listen(0, '127.0.0.1', () => resolve(undefined)));
    const { port } = /** @type {import('node:net').AddressInfo} */ (pages.address());
    pagesUrl = `http://127.0.0.1:${port}`;
    svc = await startSvc({ SVC_API_KEY: TOKEN, SVC_WEB_ALLOW_PRIVATE: `127.0.0.1:${port}` });
    client = new SvcClient({ baseUrl: svc.url + '/', apiKey: TOKEN, app: 'ts-it', agent: 'ts-it-agent', subject: 'subject-1' });
  });

  after(async () => {
    await svc?.stop();
    pages?.closeAllConnections();
    await new Promise((resolve) => (pages ? pages.close(() => resolve(undefined)) : resolve(undefined)));
  });

  /** @param {string} question */
  const ask = (question) => client.chat({ model: MODEL, messages: [{ role: 'user', content: question }] });

  test('chat: the answer, its run with the client identity, and the same question again from the exact cache', async () => {
    const first = await ask('Summarise the plot of Hamlet in one line.');
    assert.ok(first.content.length > 0);
    assert.match(first.runId, /^run_/);
    assert.equal(first.route, 'live');
    assert.equal(first.raw.object, 'chat.completion');

    const again = await ask('Summarise the plot of Hamlet in one line.');
    assert.equal(again.route, 'exact_cache');
    assert.equal(again.content, first.content);
    assert.notEqual(again.runId, first.runId);

    const detail = await client.runDetail(first.runId);
    assert.equal(detail.run.id, first.runId);
    assert.equal(detail.run.app, 'ts-it');
    assert.equal(detail.run.agent, 'ts-it-agent');
    assert.equal(detail.run.subject, 'subject-1');
    assert.equal(detail.run.route, 'live');
    assert.equal(detail.run.routeExplanation.route, 'live');
    assert.equal(detail.run.routeExplanation.policy.decision, 'allow');
    assert.ok(detail.events.length > 0);
    assert.deepEqual(detail.sideEffects, []);
  });

  /** @type {import('svc-client').ChatTool} */
  const weather = {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city.',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
        required: ['city'],
      },
    },
  };

  /**
   * read reads a stream to its end and adds its chunks up: the text, the
   * tool calls, the finish reason and the usage.
   * @param {import('svc-client').ChatStream} stream
   */
  async function read(stream) {
    /** @type {import('svc-client').ChatCompletionChunk[]} */
    const chunks = [];
    let text = '';
    /** @type {import('svc-client').ToolCall[]} */
    const toolCalls = [];
    /** @type {string | null} */
    let finish = null;
    for await (const chunk of stream) {
      chunks.push(chunk);
      const choice = chunk.choices[0];
      if (!choice) continue;
      text += choice.delta.content ?? '';
      for (const d of choice.delta.tool_calls ?? []) {
        toolCalls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
        const call = toolCalls[d.index];
        if (d.id) call.id = d.id;
        if (d.function?.name) call.function.name = d.function.name;
        call.function.arguments += d.function?.arguments ?? '';
      }
      finish = choice.finish_reason ?? finish;
    }
    return { chunks, text, toolCalls, finish, usage: chunks[chunks.length - 1]?.usage };
  }

  test('chat with tools: the model calls the tool it is told to, then answers from its result', async () => {
    /** @type {import('svc-client').ChatMessage[]} */
    const messages = [{ role: 'user', content: 'Use get_weather for Oslo, please.' }];
    const called = await client.chat({ model: MODEL, messages, tools: [weather] });
    assert.equal(called.route, 'live');
    assert.match(called.runId, /^run_/);
    assert.equal(called.content, '');
    assert.equal(called.raw.choices?.[0].finish_reason, 'tool_calls');
    assert.equal(called.toolCalls.length, 1);
    const [call] = called.toolCalls;
    assert.match(call.id, /^call_/);
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Oslo' });

    const answered = await client.chat({
      model: MODEL,
      tools: [weather],
      messages: [
        ...messages,
        { role: 'assistant', content: null, tool_calls: called.toolCalls },
        { role: 'tool', tool_call_id: call.id, content: '{"tempC":21}' },
      ],
    });
    assert.deepEqual(answered.toolCalls, []);
    assert.equal(answered.content, 'Mock answer: get_weather returned {"tempC":21}.');

    const declined = await client.chat({ model: MODEL, messages, tools: [weather], tool_choice: 'none' });
    assert.deepEqual(declined.toolCalls, []);
    assert.ok(declined.content.length > 0);

    for (const tool_choice of /** @type {import('svc-client').ToolChoice[]} */ (['required', { type: 'function', function: { name: 'get_weather' } }])) {
      const forced = await client.chat({ model: MODEL, messages: [{ role: 'user', content: 'What should I wear in Bergen?' }], tools: [weather], tool_choice });
      assert.deepEqual(forced.toolCalls.map((c) => c.function.name), ['get_weather'], JSON.stringify(tool_choice));
    }
  });

  test('chatStream: the run and route before the chunks, and the text chat then answers from the cache', async () => {
    const request = { model: MODEL, messages: [{ role: 'user', content: 'Describe a quiet harbour town at dawn.' }] };
    const stream = await client.chatStream(request);
    assert.match(stream.runId, /^run_/);
    assert.equal(stream.route, 'live');
    const { chunks, text, finish } = await read(stream);
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
    assert.ok(chunks.filter((c) => c.choices[0]?.delta.content).length > 1, 'the text came in pieces');
    assert.equal(finish, 'stop');
    assert.ok(text.length > 0);

    const cached = await client.chat(request);
    assert.equal(cached.route, 'exact_cache');
    assert.equal(cached.content, text);

    const again = await client.chatStream(request);
    assert.equal(again.route, 'exact_cache');
    assert.notEqual(again.runId, stream.runId);
    assert.equal((await read(again)).text, text);

    const detail = await client.runDetail(stream.runId);
    assert.equal(detail.run.stream, true);
    assert.equal(detail.run.route, 'live');
    assert.equal(detail.run.app, 'ts-it');
  });

  test('chatStream with tools: the tool-call deltas add up to the call chat makes, and usage comes last when asked', async () => {
    const request = {
      model: MODEL,
      messages: [{ role: 'user', content: 'Use get_weather for Trondheim in celsius.' }],
      tools: [weather],
    };
    const stream = await client.chatStream({ ...request, stream_options: { include_usage: true } });
    assert.equal(stream.route, 'live');
    const { chunks, text, toolCalls, finish, usage } = await read(stream);
    assert.equal(text, '');
    assert.equal(finish, 'tool_calls');
    const pieces = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).filter((d) => d.function?.arguments);
    assert.ok(pieces.length > 1, 'the arguments came in pieces');
    assert.equal(toolCalls.length, 1);
    assert.equal(toolCalls[0].function.name, 'get_weather');
    assert.deepEqual(JSON.parse(toolCalls[0].function.arguments), { city: 'Trondheim', unit: 'celsius' });
    assert.deepEqual(chunks[chunks.length - 1].choices, []);
    assert.ok(usage && typeof usage.total_tokens === 'number' && usage.total_tokens > 0);

    // The same request unstreamed calls the same function with the same
    // arguments (the call's id is another: svc does not cache a streamed
    // answer with tool calls, and the mock derives the id from the body).
    const whole = await client.chat(request);
    assert.deepEqual(whole.toolCalls.map((c) => c.function), toolCalls.map((c) => c.function));
  });

  test('chatStream: a refused request is an SvcApiError before any chunk', async () => {
    await assert.rejects(new SvcClient({ baseUrl: svc.url }).chatStream({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }), (err) => {
      assert.ok(err instanceof SvcApiError);
      assert.equal(err.status, 401);
      assert.match(err.message, /^Svc-API POST \/v1\/chat\/completions failed: 401 Unauthorized — \{"error":/);
      return true;
    });
    await assert.rejects(client.chatStream({ model: MODEL, messages: [] }), (err) => {
      assert.ok(err instanceof SvcApiError);
      assert.equal(err.status, 400);
      assert.equal(JSON.parse(err.body).error.param, 'messages');
      return true;
    });
  });

  test('a client without the key, or with a wrong one, gets the 401 as an error in the exact form', async () => {
    const wrong = 'svc_wrong-key-0123456789abcdef';
    for (const c of [new SvcClient({ baseUrl: svc.url }), new SvcClient({ baseUrl: svc.url, apiKey: wrong })]) {
      await assert.rejects(c.chat({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }), (err) => {
        assert.ok(err instanceof SvcApiError);
        assert.equal(err.status, 401);
        assert.match(err.message, /^Svc-API POST \/v1\/chat\/completions failed: 401 Unauthorized — \{"error":/);
        assert.ok(!err.message.includes(wrong));
        return true;
      });
    }
  });

  test('feedback: a rating with a correction lands on the run; an unknown run is a 404 error', async () => {
    const { runId } = await ask('Classify: my invoice is wrong.');
    const { feedback } = await client.feedback(runId, -1, 'billing');
    assert.equal(feedback.runId, runId);
    assert.equal(feedback.rating, -1);
    assert.equal(feedback.correction, 'billing');
    const detail = await client.runDetail(runId);
    const event = detail.events.find((e) => e.type === 'feedback');
    assert.deepEqual(event?.payload, { feedbackId: feedback.id, rating: -1, correction: 'billing' });

    await assert.rejects(client.feedback('run_missing', 1), {
      message: 'Svc-API POST /api/v1/runs/run_missing/feedback failed: 404 Not Found — {"error":{"code":"not_found","message":"run not found"}}\n',
    });
  });

  test('trace: an event appended to the run; an unknown run is a 404 error', async () => {
    const { runId } = await ask('What is the capital of Norway?');
    const res = await client.trace(runId, 'agent.note', { step: 1 });
    assert.equal(res.event.type, 'agent.note');
    assert.equal(typeof res.event.seq, 'number');
    const detail = await client.runDetail(runId);
    const last = detail.events[detail.events.length - 1];
    assert.equal(last.type, 'agent.note');
    assert.deepEqual(last.payload, { step: 1 });
    assert.equal(last.hash, res.event.hash);
    await assert.rejects(client.trace('run_missing', 'agent.note', {}), notFound('run'));
  });

  test('traceTool: a read-only tool is served from the tool-result cache the second time, without executing', async () => {
    const { runId } = await ask('What is the weather in Oslo?');
    const statsBefore = await client.cacheStats();
    let executions = 0;
    const weather = client.traceTool({
      name: 'weather',
      sideEffectLevel: 0,
      ttlSeconds: 60,
      execute: async (/** @type {{city: string}} */ args) => {
        executions++;
        return { city: args.city, tempC: 21 };
      },
    });
    const first = await weather({ city: 'Oslo' }, { runId });
    const second = await weather({ city: 'Oslo' }, { runId });
    assert.deepEqual(first, { city: 'Oslo', tempC: 21 });
    assert.deepEqual(second, first);
    assert.equal(executions, 1, 'the second call came from the cache');
    await weather({ city: 'Bergen' }, { runId });
    assert.equal(executions, 2, 'other arguments are another entry');

    const detail = await client.runDetail(runId);
    const tools = detail.events.filter((e) => e.type.startsWith('tool.')).map((e) => [e.type, e.payload]);
    assert.deepEqual(tools, [
      ['tool.called', { name: 'weather', args: { city: 'Oslo' }, sideEffectLevel: 0 }],
      ['tool.completed', { name: 'weather', result: { city: 'Oslo', tempC: 21 } }],
      ['tool.completed', { name: 'weather', result: { city: 'Oslo', tempC: 21 }, cached: true }],
      ['tool.called', { name: 'weather', args: { city: 'Bergen' }, sideEffectLevel: 0 }],
      ['tool.completed', { name: 'weather', result: { city: 'Bergen', tempC: 21 } }],
    ]);

    const tier = (/** @type {import('svc-client').CacheStats} */ s) => s.stats.find((x) => x.cacheType === 'tool_result');
    const before = tier(statsBefore);
    const after = tier(await client.cacheStats());
    assert.ok(before && after);
    assert.equal(after.entries, before.entries + 2);
    assert.equal(after.hits, before.hits + 1);
  });

  test('traceTool: a side effect is planned before it runs and executed when the tool completes', async () => {
    const { runId } = await ask('Email the customer that the refund is on its way.');
    const sendEmail = client.traceTool({
      name: 'send_email',
      sideEffectLevel: 3,
      ttlSeconds: 60, // ignored: level 3 is never cached
      execute: async () => ({ sent: true }),
    });
    assert.deepEqual(await sendEmail({ to: 'c@example.com' }, { runId }), { sent: true });
    const detail = await client.runDetail(runId);
    assert.deepEqual(
      detail.events.filter((e) => e.type.startsWith('tool.') || e.type === 'side_effect.planned').map((e) => e.type),
      ['tool.called', 'side_effect.planned', 'tool.completed'],
    );
    assert.equal(detail.sideEffects.length, 1);
    const [effect] = detail.sideEffects;
    assert.equal(effect.toolName, 'send_email');
    assert.equal(effect.level, 3);
    assert.deepEqual(effect.payload, { to: 'c@example.com' });
    assert.equal(effect.state, 'executed');
  });

  test('savings: a live run and a cached one move the summary', async () => {
    const before = await client.savings();
    await ask('Translate "good morning" to French.');
    await ask('Translate "good morning" to French.');
    const after = await client.savings();
    assert.equal(after.totalRuns, before.totalRuns + 2);
    assert.equal(after.liveRuns, before.liveRuns + 1);
    assert.equal(after.optimizedRuns, before.optimizedRuns + 1);
    assert.ok(after.totalCostUsd > before.totalCostUsd);
    assert.ok(after.totalSavedUsd > before.totalSavedUsd);
    assert.ok(after.cacheHitRate > 0 && after.cacheHitRate <= 1);
    for (const k of /** @type {const} */ (['blockedRuns', 'ghostSavedUsd', 'totalSavedMs', 'artifactHitRate', 'somTokensSaved'])) {
      assert.equal(typeof after[k], 'number', k);
    }
  });

  test('budgets and spend: a hard budget set, reached and refusing with 429 budget_exceeded; the spend read; the budget deleted', async () => {
    const app = 'ts-budget';
    const capped = new SvcClient({ baseUrl: svc.url, apiKey: TOKEN, app });
    const set = await client.setBudgets([{ id: 'ts-budget-day', scope: 'app', match: app, window: 'day', limitRequests: 2 }]);
    assert.deepEqual(set.map((b) => [b.id, b.kind]), [['ts-budget-day', 'hard']]);
    await capped.chat({ model: MODEL, messages: [{ role: 'user', content: 'Budget question one.' }] });
    await capped.chat({ model: MODEL, messages: [{ role: 'user', content: 'Budget question two.' }] });
    await assert.rejects(capped.chat({ model: MODEL, messages: [{ role: 'user', content: 'Budget question three.' }] }), (err) => {
      assert.ok(err instanceof SvcApiError, String(err));
      assert.equal(err.status, 429, err.message);
      assert.equal(JSON.parse(err.body).error.code, 'budget_exceeded', err.body);
      return true;
    });

    const [budget] = await client.budgets();
    assert.equal(budget.id, 'ts-budget-day');
    assert.equal(budget.spent?.requests, 2, 'the refused call counts nothing');
    assert.ok(budget.windowStart && budget.resetsAt && Date.parse(budget.resetsAt) > Date.parse(budget.windowStart));
    const report = await client.spend({ scope: 'app', window: 'day' });
    assert.equal(report.scope, 'app');
    assert.equal(report.items.find((it) => it.key === app)?.requests, 2);

    assert.equal((await client.putBudget({ id: 'ts-budget-day', scope: 'app', match: app, window: 'day', limitRequests: 3 }))[0].limitRequests, 3);
    await capped.chat({ model: MODEL, messages: [{ role: 'user', content: 'Budget question four.' }] });
    await client.deleteBudget('ts-budget-day');
    assert.deepEqual(await client.budgets(), []);
    await assert.rejects(client.deleteBudget('ts-budget-day'), (err) => {
      assert.ok(err instanceof SvcApiError, String(err));
      assert.equal(err.status, 404, err.message);
      return true;
    });
  });

  test('cacheStats: the four tiers', async () => {
    const { stats } = await client.cacheStats();
    assert.deepEqual(stats.map((s) => s.cacheType).sort(), ['exact_response', 'negative', 'som', 'tool_result']);
    const exact = stats.find((s) => s.cacheType === 'exact_response');
    assert.ok(exact && exact.entries > 0 && exact.hits > 0);
  });

  test('fetchSom: a page compiled, then served from the SOM cache, then compiled afresh on request', async () => {
    const url = `${pagesUrl}/shop.html`;
    const first = await client.fetchSom(url);
    assert.ok(['builtin', 'external'].includes(first.source), first.source);
    assert.equal(first.cached, false);
    assert.ok(first.htmlBytes > 0 && first.somBytes > 0);
    assert.ok(first.somBytes < first.htmlBytes);
    assert.equal(typeof first.tokensSavedEstimate, 'number');
    assert.ok(first.context.includes('Trail Boots'));
    assert.ok(first.som.elements.some((e) => e.id.startsWith('e_')));
    assert.ok(first.som.regions.some((r) => r.id.startsWith('r_form')));

    const cached = await client.fetchSom(url);
    assert.equal(cached.cached, true);
    assert.equal(cached.source, 'cache');

    const fresh = await client.fetchSom(url, { bypassCache: true });
    assert.equal(fresh.cached, false);
    assert.ok(fresh.diff, 'a previous snapshot exists, so there is a diff');
    assert.ok(fresh.diff.driftScore >= 0 && fresh.diff.driftScore <= 0.1, `an unchanged page drifts little: ${fresh.diff.driftScore}`);
  });

  test('web session: open, list, click a link, type, close; the closed session is gone', async () => {
    const opened = await client.web.openSession(`${pagesUrl}/shop.html`);
    const id = opened.session.id;
    assert.ok(id);
    assert.ok(opened.session.url.startsWith(pagesUrl), opened.session.url);

    const list = await client.web.listSessions();
    assert.ok(list.sessions.some((s) => s.id === id));

    const search = elementId(opened.som, opened.context, 'Find boots');
    const link = elementId(opened.som, opened.context, 'Next page');
    assert.ok(search && link, `element ids of the search box and the link in:\n${opened.context}`);

    const typed = await client.web.act(id, { action: 'type', target: search, value: 'boots' });
    assert.equal(typed.result.ok, true);
    assert.equal(typed.result.action, 'type');
    assert.equal(typed.result.target, search);

    const clicked = await client.web.act(id, { action: 'click', target: link });
    assert.equal(clicked.result.ok, true);
    assert.equal(clicked.result.navigated, true);
    assert.equal(clicked.result.url, `${pagesUrl}/next.html`);
    assert.ok(clicked.context.includes('Second page'));

    const closed = await client.web.closeSession(id);
    assert.deepEqual(closed, { ok: true });
    await assert.rejects(client.web.act(id, { action: 'click', target: link }), notFound('web session'));
  });

  test('patterns: a list', async () => {
    assert.ok(Array.isArray(await client.patterns()));
  });

  test('artifacts: a list; an unknown artifact is a 404 error', async () => {
    assert.ok(Array.isArray(await client.artifacts()));
    await assert.rejects(client.artifactDetail('art_missing'), notFound('artifact'));
  });

  test('promoteArtifact: an unknown artifact is a 404 error', async () => {
    await assert.rejects(client.promoteArtifact('art_missing'), notFound('artifact'));
  });

  test('learningTick: one pass, and its report', async () => {
    const report = await client.learningTick();
    assert.equal(typeof report.artifactsSynthesized, 'number');
    assert.ok(Array.isArray(report.promotionsEligible));
    assert.ok(Array.isArray(report.autoPromoted));
  });
});
