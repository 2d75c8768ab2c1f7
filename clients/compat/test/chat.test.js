// @ts-check
// Chat completions through the official openai package and the Vercel AI
// SDK's chat model, against the real svc and its mock provider.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

import { MODEL, aiProvider, openaiClient, startGateway, until } from './harness.js';

const QUESTION = 'How do I reverse a list in Python?';
const ANSWER = 'Mock answer: reverse list Python.';

/** @type {import('openai').OpenAIChatCompletionTool} */
const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

/** @type {Awaited<ReturnType<typeof startGateway>>} */
let svc;
before(async () => {
  svc = await startGateway();
});
after(async () => {
  await svc?.stop();
});

describe('openai chat.completions', () => {
  test('create answers with content, usage and the model asked for', async () => {
    const res = await openaiClient(svc.url).chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: QUESTION }],
    });
    assert.equal(res.object, 'chat.completion');
    assert.equal(res.model, MODEL);
    assert.equal(res.choices.length, 1);
    assert.equal(res.choices[0].message.role, 'assistant');
    assert.equal(res.choices[0].message.content, ANSWER);
    assert.equal(res.choices[0].finish_reason, 'stop');
    assert.ok(res.usage && res.usage.prompt_tokens > 0 && res.usage.completion_tokens > 0, JSON.stringify(res.usage));
    assert.equal(res.usage.total_tokens, res.usage.prompt_tokens + res.usage.completion_tokens);
  });

  test('a stream delivers the same answer in chunks, then usage', async () => {
    const stream = await openaiClient(svc.url).chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: QUESTION }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish = null;
    let usage = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      assert.equal(chunk.object, 'chat.completion.chunk');
      for (const c of chunk.choices) {
        text += c.delta.content ?? '';
        finish = c.finish_reason ?? finish;
      }
      usage = chunk.usage ?? usage;
    }
    assert.ok(chunks > 2, `${chunks} chunks`);
    assert.equal(text, ANSWER);
    assert.equal(finish, 'stop');
    assert.ok(usage && usage.completion_tokens > 0, JSON.stringify(usage));
  });

  test('a function tool is called, and its output answered', async () => {
    const client = openaiClient(svc.url);
    /** @type {import('openai').OpenAI.ChatCompletionMessageParam[]} */
    const messages = [{ role: 'user', content: 'Use get_weather for the weather in Paris.' }];
    const first = await client.chat.completions.create({ model: MODEL, messages, tools: [weatherTool] });
    const choice = first.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, null);
    const call = choice.message.tool_calls?.[0];
    assert.ok(call && call.type === 'function', JSON.stringify(choice.message));
    assert.equal(call.function.name, 'get_weather');
    assert.equal(typeof JSON.parse(call.function.arguments).city, 'string');

    messages.push(choice.message, { role: 'tool', tool_call_id: call.id, content: '{"temp_c":21}' });
    const second = await client.chat.completions.create({ model: MODEL, messages, tools: [weatherTool] });
    assert.equal(second.choices[0].finish_reason, 'stop');
    assert.match(second.choices[0].message.content ?? '', /get_weather returned \{"temp_c":21\}/);
  });

  test('a streamed tool call arrives as argument deltas', async () => {
    const stream = await openaiClient(svc.url).chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Use get_weather for the weather in Paris.' }],
      tools: [weatherTool],
      stream: true,
    });
    let name = '';
    let args = '';
    let finish = null;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        for (const tc of c.delta.tool_calls ?? []) {
          name += tc.function?.name ?? '';
          args += tc.function?.arguments ?? '';
        }
        finish = c.finish_reason ?? finish;
      }
    }
    assert.equal(name, 'get_weather');
    assert.equal(typeof JSON.parse(args).city, 'string');
    assert.equal(finish, 'tool_calls');
  });

  test('a JSON schema response format is answered with matching JSON', async () => {
    const res = await openaiClient(svc.url).chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Describe a ticket about a double charge.' }],
      response_format: {
        type: 'json_schema',
        json_schema: {
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
    const value = JSON.parse(res.choices[0].message.content ?? '');
    assert.ok(['billing', 'bug'].includes(value.category), JSON.stringify(value));
    assert.equal(typeof value.urgent, 'boolean');
  });

  test('n: 3 answers three distinct choices with their own indices', until('n'), async () => {
    const res = await openaiClient(svc.url).chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Suggest a name for a cat.' }],
      n: 3,
    });
    assert.deepEqual(res.choices.map((c) => c.index), [0, 1, 2]);
    const contents = res.choices.map((c) => c.message.content);
    assert.equal(new Set(contents).size, 3, JSON.stringify(contents));
  });
});

describe('AI SDK chat model', () => {
  test('generateText', async () => {
    const result = await generateText({ model: aiProvider(svc.url).chat(MODEL), prompt: QUESTION, maxRetries: 0 });
    assert.equal(result.text, ANSWER);
    assert.equal(result.finishReason, 'stop');
    assert.ok((result.usage.outputTokens ?? 0) > 0, JSON.stringify(result.usage));
  });

  test('streamText', async () => {
    const result = streamText({ model: aiProvider(svc.url).chat(MODEL), prompt: QUESTION, maxRetries: 0 });
    let text = '';
    for await (const part of result.textStream) text += part;
    assert.equal(text, ANSWER);
    assert.equal(await result.finishReason, 'stop');
  });

  test('a tool call, executed, then answered', async () => {
    const result = await generateText({
      model: aiProvider(svc.url).chat(MODEL),
      prompt: 'Use get_weather for the weather in Paris.',
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
    const call = result.steps[0].toolCalls[0];
    assert.equal(call?.toolName, 'get_weather');
    assert.match(result.text, /get_weather returned .*temp_c/);
  });
});
