// @ts-check
// The Responses API through the official openai package and through the
// Vercel AI SDK's default model (openai(model), which speaks Responses),
// against the real svc: svc translates to chat completions for the mock.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { generateText, stepCountIs, streamText, tool } from 'ai';
import { APIError } from 'openai';
import { z } from 'zod';

import { MODEL, aiProvider, openaiClient, startGateway, until } from './harness.js';

const QUESTION = 'How do I reverse a list in Python?';
const ANSWER = 'Mock answer: reverse list Python.';
const WEATHER_PROMPT = 'Use get_weather for the weather in Paris.';

/** @type {import('openai').OpenAI.Responses.FunctionTool} */
const weatherTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
};

/** @type {Awaited<ReturnType<typeof startGateway>>} */
let svc;
before(async () => {
  svc = await startGateway();
});
after(async () => {
  await svc?.stop();
});

/**
 * rtest is a test of the Responses API, pending until it lands.
 * @param {string} name
 * @param {() => Promise<void>} fn
 */
const rtest = (name, fn) => test(name, until('responses'), fn);

/**
 * functionCall finds the one function_call output item of a response.
 * @param {import('openai').OpenAI.Responses.Response} res
 */
function functionCall(res) {
  const calls = res.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1, JSON.stringify(res.output));
  return /** @type {import('openai').OpenAI.Responses.ResponseFunctionToolCall} */ (calls[0]);
}

describe('openai responses', () => {
  rtest('create answers a text input with a message item and usage', async () => {
    const client = openaiClient(svc.url);
    const res = await client.responses.create({ model: MODEL, input: QUESTION });
    assert.equal(res.object, 'response');
    assert.equal(res.status, 'completed');
    assert.equal(res.model, MODEL);
    assert.match(res.id, /^resp_/);
    assert.equal(res.output_text, ANSWER);
    const message = res.output.find((o) => o.type === 'message');
    assert.ok(message && message.role === 'assistant', JSON.stringify(res.output));
    assert.equal(message.content[0].type, 'output_text');
    assert.ok(res.usage && res.usage.input_tokens > 0 && res.usage.output_tokens > 0, JSON.stringify(res.usage));
    assert.equal(res.usage.total_tokens, res.usage.input_tokens + res.usage.output_tokens);

    const again = await client.responses.retrieve(res.id);
    assert.equal(again.id, res.id);
    assert.equal(again.output_text, ANSWER);
  });

  rtest('instructions and input items are read like system and user messages', async () => {
    const res = await openaiClient(svc.url).responses.create({
      model: MODEL,
      instructions: 'Classify the message as one of: billing, bug, feature.',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'I was charged twice for my invoice.' }] }],
    });
    assert.equal(res.output_text, 'billing');
  });

  rtest('a stream sends the Responses events, deltas adding up to the answer', async () => {
    const stream = await openaiClient(svc.url).responses.create({ model: MODEL, input: QUESTION, stream: true });
    /** @type {string[]} */
    const types = [];
    let text = '';
    /** @type {import('openai').OpenAI.Responses.Response | undefined} */
    let completed;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    for (const t of ['response.output_item.added', 'response.content_part.added', 'response.output_text.done', 'response.output_item.done']) {
      assert.ok(types.includes(t), `${t} missing from ${types.join(', ')}`);
    }
    assert.equal(text, ANSWER);
    assert.equal(completed?.output_text ?? completed?.output.find((o) => o.type === 'message')?.content[0]?.text, ANSWER);
    assert.ok((completed?.usage?.output_tokens ?? 0) > 0, JSON.stringify(completed?.usage));
  });

  rtest('a function tool is called, and its output answered through previous_response_id', async () => {
    const client = openaiClient(svc.url);
    const first = await client.responses.create({ model: MODEL, input: WEATHER_PROMPT, tools: [weatherTool] });
    const call = functionCall(first);
    assert.equal(call.name, 'get_weather');
    assert.equal(typeof JSON.parse(call.arguments).city, 'string');
    assert.ok(call.call_id, JSON.stringify(call));

    // The mock names the function only when it sees the call that made the
    // result, so this answer shows svc rebuilt the conversation.
    const second = await client.responses.create({
      model: MODEL,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temp_c":21}' }],
      tools: [weatherTool],
    });
    assert.equal(second.status, 'completed');
    assert.match(second.output_text, /get_weather returned \{"temp_c":21\}/);
  });

  rtest('the function call and its output can be sent back as input items', async () => {
    const client = openaiClient(svc.url);
    const first = await client.responses.create({ model: MODEL, input: WEATHER_PROMPT, tools: [weatherTool] });
    const call = functionCall(first);
    const second = await client.responses.create({
      model: MODEL,
      input: [
        { role: 'user', content: WEATHER_PROMPT },
        { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: '{"temp_c":21}' },
      ],
      tools: [weatherTool],
    });
    assert.match(second.output_text, /get_weather returned \{"temp_c":21\}/);
  });

  rtest('a streamed function call sends its arguments as deltas', async () => {
    const stream = await openaiClient(svc.url).responses.create({
      model: MODEL,
      input: WEATHER_PROMPT,
      tools: [weatherTool],
      stream: true,
    });
    let args = '';
    let done = '';
    let added = '';
    for await (const event of stream) {
      if (event.type === 'response.output_item.added' && event.item.type === 'function_call') added = event.item.name;
      if (event.type === 'response.function_call_arguments.delta') args += event.delta;
      if (event.type === 'response.function_call_arguments.done') done = event.arguments;
    }
    assert.equal(added, 'get_weather');
    assert.equal(args, done);
    assert.equal(typeof JSON.parse(done).city, 'string');
  });

  rtest('previous_response_id sends the earlier turns upstream', async () => {
    const client = openaiClient(svc.url);
    const first = await client.responses.create({ model: MODEL, input: 'Remember that my cat is called Ada.' });
    const alone = await client.responses.create({ model: MODEL, input: 'What is my cat called?' });
    const chained = await client.responses.create({ model: MODEL, input: 'What is my cat called?', previous_response_id: first.id });
    assert.ok(
      (chained.usage?.input_tokens ?? 0) > (alone.usage?.input_tokens ?? 0),
      `chained ${chained.usage?.input_tokens} input tokens, alone ${alone.usage?.input_tokens}`,
    );
  });

  rtest('an unknown previous_response_id is refused, naming it', async () => {
    await assert.rejects(
      openaiClient(svc.url).responses.create({ model: MODEL, input: 'hello', previous_response_id: 'resp_unknown' }),
      (err) => {
        // OpenAI answers 400 previous_response_not_found; a record svc does
        // not have is a 404 in svc. Either, but never the 404 of a missing route.
        assert.ok(err instanceof APIError && (err.status === 400 || err.status === 404), String(err));
        assert.doesNotMatch(err.message, /no route/);
        assert.match(err.message, /resp_unknown|previous_response/);
        return true;
      },
    );
  });

  rtest('inputItems.list pages the input of a response, and retrieve reads back instructions and metadata', async () => {
    const client = openaiClient(svc.url);
    const res = await client.responses.create({
      model: MODEL,
      instructions: 'Answer briefly.',
      metadata: { ticket: 'T-1' },
      input: [
        { role: 'user', content: 'one' },
        { role: 'user', content: [{ type: 'input_text', text: 'two' }] },
      ],
    });
    const back = await client.responses.retrieve(res.id);
    assert.equal(back.instructions, 'Answer briefly.');
    assert.deepEqual(back.metadata, { ticket: 'T-1' });

    const page = await client.responses.inputItems.list(res.id, { order: 'asc' });
    const texts = page.data.map((it) => {
      assert.equal(it.type, 'message', JSON.stringify(it));
      const item = /** @type {import('openai').OpenAI.Responses.ResponseInputMessageItem} */ (it);
      assert.equal(item.role, 'user');
      return item.content.map((c) => (c.type === 'input_text' ? c.text : '')).join('');
    });
    assert.deepEqual(texts, ['one', 'two']);

    const ids = [];
    for await (const item of client.responses.inputItems.list(res.id, { limit: 1 })) ids.push(item.id);
    assert.deepEqual(ids, page.data.map((it) => it.id).reverse(), 'newest first by default, one a page');
  });

  rtest('delete removes a response: retrieve is then 404', async () => {
    const client = openaiClient(svc.url);
    const res = await client.responses.create({ model: MODEL, input: QUESTION });
    await client.responses.delete(res.id);
    await assert.rejects(client.responses.retrieve(res.id), (err) => {
      assert.ok(err instanceof APIError && err.status === 404, String(err));
      return true;
    });
    await assert.rejects(client.responses.create({ model: MODEL, input: 'again', previous_response_id: res.id }), (err) => {
      assert.ok(err instanceof APIError && err.status === 400, String(err));
      assert.match(err.message, /not found/);
      return true;
    });
  });

  rtest('cancel is refused: svc runs no response in the background', async () => {
    const client = openaiClient(svc.url);
    const res = await client.responses.create({ model: MODEL, input: QUESTION });
    await assert.rejects(client.responses.cancel(res.id), (err) => {
      assert.ok(err instanceof APIError && err.status === 400, String(err));
      assert.match(err.message, /background/);
      return true;
    });
  });

  rtest('text.format with a JSON schema is answered with matching JSON', async () => {
    const res = await openaiClient(svc.url).responses.create({
      model: MODEL,
      input: 'Describe a ticket about a double charge.',
      text: {
        format: {
          type: 'json_schema',
          name: 'ticket',
          strict: true,
          schema: {
            type: 'object',
            properties: { category: { type: 'string', enum: ['billing', 'bug'] }, urgent: { type: 'boolean' } },
            required: ['category', 'urgent'],
            additionalProperties: false,
          },
        },
      },
    });
    const value = JSON.parse(res.output_text);
    assert.ok(['billing', 'bug'].includes(value.category), JSON.stringify(value));
    assert.equal(typeof value.urgent, 'boolean');
  });
});

describe('AI SDK default model (Responses)', () => {
  rtest('generateText', async () => {
    const result = await generateText({ model: aiProvider(svc.url)(MODEL), prompt: QUESTION, maxRetries: 0 });
    assert.equal(result.text, ANSWER);
    assert.equal(result.finishReason, 'stop');
    assert.ok((result.usage.outputTokens ?? 0) > 0, JSON.stringify(result.usage));
  });

  rtest('streamText', async () => {
    const result = streamText({ model: aiProvider(svc.url)(MODEL), prompt: QUESTION, maxRetries: 0 });
    let text = '';
    for await (const part of result.textStream) text += part;
    assert.equal(text, ANSWER);
    assert.equal(await result.finishReason, 'stop');
  });

  rtest('a tool call, executed, then answered in a second step', async () => {
    const result = await generateText({
      model: aiProvider(svc.url)(MODEL),
      prompt: WEATHER_PROMPT,
      tools: {
        get_weather: tool({
          description: 'The weather in a city.',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => ({ city, temp_c: 21 }),
        }),
      },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    assert.equal(result.steps.length, 2);
    assert.equal(result.steps[0].toolCalls[0]?.toolName, 'get_weather');
    assert.match(result.text, /get_weather returned .*temp_c/);
  });
});
