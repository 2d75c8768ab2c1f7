// @ts-check
// Embeddings through the official openai package against the real svc: the
// mock answers deterministic, normalized vectors of the model's size, with
// close texts closer than unrelated ones.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { openaiClient, startGateway, until } from './harness.js';

const MODEL = 'text-embedding-3-small';
const SIZE = 1536; // text-embedding-3-small's documented dimensions

/** @type {Awaited<ReturnType<typeof startGateway>>} */
let svc;
before(async () => {
  svc = await startGateway();
});
after(async () => {
  await svc?.stop();
});

/**
 * etest is a test of the embeddings API, pending until it lands.
 * @param {string} name
 * @param {() => Promise<void>} fn
 */
const etest = (name, fn) => test(name, until('embeddings'), fn);

/** @param {number[]} a @param {number[]} b */
const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);

/**
 * fromBase64 decodes the base64 encoding_format: little-endian float32s.
 * @param {string} s
 */
function fromBase64(s) {
  const buf = Buffer.from(s, 'base64');
  return Array.from({ length: buf.length / 4 }, (_, i) => buf.readFloatLE(i * 4));
}

describe('openai embeddings', () => {
  etest('a string input, as floats: one normalized vector of the model size, and usage', async () => {
    const res = await openaiClient(svc.url).embeddings.create({ model: MODEL, input: 'A cat sat on the mat.', encoding_format: 'float' });
    assert.equal(res.object, 'list');
    assert.equal(res.model, MODEL);
    assert.equal(res.data.length, 1);
    assert.equal(res.data[0].object, 'embedding');
    assert.equal(res.data[0].index, 0);
    const v = res.data[0].embedding;
    assert.equal(v.length, SIZE);
    assert.ok(v.every((x) => typeof x === 'number' && Number.isFinite(x)));
    assert.ok(Math.abs(dot(v, v) - 1) < 1e-3, `norm² ${dot(v, v)}`);
    assert.ok(res.usage.prompt_tokens > 0, JSON.stringify(res.usage));
    assert.equal(res.usage.total_tokens, res.usage.prompt_tokens);
  });

  etest('an array input: a vector each, in order, close texts closer than unrelated ones', async () => {
    const res = await openaiClient(svc.url).embeddings.create({
      model: MODEL,
      input: ['A cat sat on the mat.', 'The cat is sitting on a mat.', 'Quarterly tax filing deadlines for companies.'],
      encoding_format: 'float',
    });
    assert.deepEqual(res.data.map((d) => d.index), [0, 1, 2]);
    const [a, b, c] = res.data.map((d) => d.embedding);
    assert.ok(dot(a, b) > dot(a, c), `close ${dot(a, b)}, unrelated ${dot(a, c)}`);
  });

  etest('the same input gives the same vector', async () => {
    const client = openaiClient(svc.url);
    const one = await client.embeddings.create({ model: MODEL, input: 'deterministic', encoding_format: 'float' });
    const two = await client.embeddings.create({ model: MODEL, input: 'deterministic', encoding_format: 'float' });
    assert.deepEqual(two.data[0].embedding, one.data[0].embedding);
  });

  etest('base64 carries the same vector as float32s', async () => {
    const client = openaiClient(svc.url);
    const floats = await client.embeddings.create({ model: MODEL, input: 'A cat sat on the mat.', encoding_format: 'float' });
    const b64 = await client.embeddings.create({ model: MODEL, input: 'A cat sat on the mat.', encoding_format: 'base64' });
    const raw = /** @type {unknown} */ (b64.data[0].embedding);
    assert.equal(typeof raw, 'string');
    const decoded = fromBase64(/** @type {string} */ (raw));
    assert.equal(decoded.length, SIZE);
    decoded.forEach((x, i) => assert.ok(Math.abs(x - floats.data[0].embedding[i]) < 1e-6, `at ${i}: ${x}`));
  });

  etest('the SDK default (base64 on the wire, decoded by the SDK) gives the float vector', async () => {
    const client = openaiClient(svc.url);
    const floats = await client.embeddings.create({ model: MODEL, input: 'A cat sat on the mat.', encoding_format: 'float' });
    const dflt = await client.embeddings.create({ model: MODEL, input: 'A cat sat on the mat.' });
    assert.equal(dflt.data[0].embedding.length, SIZE);
    dflt.data[0].embedding.forEach((x, i) => assert.ok(Math.abs(x - floats.data[0].embedding[i]) < 1e-6, `at ${i}: ${x}`));
  });

  etest('dimensions shortens the vector, still normalized', async () => {
    const res = await openaiClient(svc.url).embeddings.create({ model: MODEL, input: 'A cat sat on the mat.', dimensions: 256, encoding_format: 'float' });
    const v = res.data[0].embedding;
    assert.equal(v.length, 256);
    assert.ok(Math.abs(dot(v, v) - 1) < 1e-3, `norm² ${dot(v, v)}`);
  });
});
