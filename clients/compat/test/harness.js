// @ts-check
// What every compat test shares: the real svc (bin/svc with the mock
// provider and a fresh temporary database, started the way the TypeScript
// client's integration tests start it), the key the SDKs send, and the
// switch for tests of features not served yet.

import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';

import { startSvc } from '../../typescript/test/svc-process.js';

export const MODEL = 'gpt-4o-mini';

// The official SDKs refuse to start without an API key. svc runs in open dev
// mode and the SDKs send a dummy key, as a new user's first call does; set
// this to false to run svc with SVC_API_KEY and send that key instead.
export const OPEN_DEV_MODE = true;

export const API_KEY = OPEN_DEV_MODE ? 'sk-any-dummy-key' : 'compat-tests-bootstrap-key';

/**
 * startGateway runs bin/svc for one test file, with extra environment added.
 * @param {Record<string, string>} [env]
 */
export function startGateway(env = {}) {
  return startSvc({ ...(OPEN_DEV_MODE ? {} : { SVC_API_KEY: API_KEY }), ...env });
}

/**
 * openaiClient is the official client pointed at svc. Retries are off, so a
 * failing call fails at once instead of being hidden or slowed by a retry.
 * @param {string} url svc's base URL
 * @param {string} [apiKey]
 */
export function openaiClient(url, apiKey = API_KEY) {
  return new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });
}

/**
 * aiProvider is the Vercel AI SDK's OpenAI provider pointed at svc:
 * provider(model) is its default (Responses API) model, provider.chat(model)
 * the chat-completions one.
 * @param {string} url
 */
export function aiProvider(url) {
  return createOpenAI({ baseURL: `${url}/v1`, apiKey: API_KEY });
}

// Features written down before svc serves them. A test
// of one of them is a node:test `todo` (it runs, its failure is reported but
// does not fail the suite) until its name leaves this set, which is done
// when the feature lands; SVC_COMPAT_PENDING=1 runs them all as ordinary
// tests to see where the work stands.
const pendingFeatures = new Set([]); // none: every feature of this release is served

/**
 * until gives the node:test options for a test that needs feature.
 * @param {string} feature
 * @returns {{ todo?: string }}
 */
export function until(feature) {
  if (!pendingFeatures.has(feature) || process.env.SVC_COMPAT_PENDING === '1') return {};
  return { todo: `waits for ${feature}` };
}
