// @ts-check
// First contact: svc in open dev mode (no SVC_API_KEY) and the official SDK
// with whatever key the user had at hand, as the README's first call does.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { AuthenticationError } from 'openai';

import { MODEL, openaiClient, until } from './harness.js';
import { startSvc } from '../../typescript/test/svc-process.js';

/** @type {Awaited<ReturnType<typeof startSvc>>} */
let svc;
before(async () => {
  svc = await startSvc(); // open dev mode: no SVC_API_KEY, no users
});
after(async () => {
  await svc?.stop();
});

describe('open dev mode', () => {
  test('a dummy key is served like a request without credentials', until('dummy-key'), async () => {
    const client = openaiClient(svc.url, 'sk-anything');
    const res = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hello there' }] });
    assert.match(res.choices[0].message.content ?? '', /^Mock answer: /);
    const models = await client.models.list();
    assert.ok(models.data.some((m) => m.id === MODEL));
  });

  test('an unknown svc_ key is still refused, so a mistyped real key never becomes admin', async () => {
    await assert.rejects(
      openaiClient(svc.url, 'svc_not_a_real_key').chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hello' }] }),
      (err) => err instanceof AuthenticationError,
    );
  });
});
