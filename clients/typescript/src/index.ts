// svc-client: the library applications and agents use to talk to svc.
// It holds no state between calls, has no dependencies, and uses the
// global fetch of Node 18+ or Bun.

import { type SseEvent, SseParser } from './sse.js';
import type {
  Artifact,
  ArtifactDetail,
  Budget,
  BudgetInput,
  CacheStats,
  CallOptions,
  ChatCompletion,
  ChatCompletionChunk,
  ChatRequest,
  ChatResult,
  ChatStream,
  ChatStreamRequest,
  FeedbackResult,
  FetchSomOptions,
  LearningReport,
  Open,
  Pattern,
  Route,
  RunDetail,
  SavingsSummary,
  SomFetchResult,
  SpendQuery,
  SpendReport,
  SvcClientOptions,
  ToolCacheCheckResult,
  ToolContext,
  ToolDefinition,
  TraceEventType,
  TraceResult,
  TracedTool,
  WebActResponse,
  WebIntent,
  WebSessionClosed,
  WebSessionList,
  WebSessionOpened,
} from './types.js';

export type * from './types.js';

/** The address of a local svc. */
export const DEFAULT_BASE_URL = 'http://localhost:4100';

/** The app a client names when it is given none. */
export const DEFAULT_APP = 'default-app';

/** The side-effect level of a tool that does not say. */
export const DEFAULT_SIDE_EFFECT_LEVEL = 3;

/** How much of an error response's body an error message quotes. */
export const ERROR_BODY_LIMIT = 500;

/**
 * SvcApiError is what a method throws when svc answers with a status
 * outside 2xx (a policy block is a 403). Its message reads
 * `Svc-API <METHOD> <path> failed: <status> <statusText> — <body excerpt>`.
 */
export class SvcApiError extends Error {
  /** The request's method. */
  readonly method: string;
  /** The request's path, without the base URL. */
  readonly path: string;
  /** The response's status. */
  readonly status: number;
  /** The response's status text. */
  readonly statusText: string;
  /** The response's body (with the client's API key masked, should svc ever echo it). */
  readonly body: string;

  constructor(method: string, path: string, status: number, statusText: string, body: string) {
    super(`Svc-API ${method} ${path} failed: ${status} ${statusText} — ${excerpt(body)}`);
    this.name = 'SvcApiError';
    this.method = method;
    this.path = path;
    this.status = status;
    this.statusText = statusText;
    this.body = body;
  }
}

/** The chat-completions path. */
const CHAT_PATH = '/v1/chat/completions';

/** The first ERROR_BODY_LIMIT characters of s (code points, never half a surrogate pair). */
function excerpt(s: string): string {
  if (s.length <= ERROR_BODY_LIMIT) return s;
  return Array.from(s).slice(0, ERROR_BODY_LIMIT).join('');
}

/** The web-session methods of a client: open, act, close and list. */
export interface WebSessions {
  /** Opens a stateful session on url (`POST /api/v1/web/sessions`). */
  openSession(url: string): Promise<WebSessionOpened>;
  /** Acts on an element of the session's page (`POST /api/v1/web/sessions/:id/act`). */
  act(sessionId: string, intent: WebIntent): Promise<WebActResponse>;
  /** Closes the session (`DELETE /api/v1/web/sessions/:id`). */
  closeSession(sessionId: string): Promise<WebSessionClosed>;
  /** Lists the tenant's sessions (`GET /api/v1/web/sessions`). */
  listSessions(): Promise<WebSessionList>;
}

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

interface Answer<T> {
  data: T;
  headers: Headers;
}

/**
 * SvcClient talks to one svc. It keeps no state between calls, never
 * retries, and keeps its API key in a private field.
 *
 * ```ts
 * const svc = new SvcClient({ apiKey: process.env.SVC_API_KEY, app: 'support' });
 * const { content, runId } = await svc.chat({ model: 'gpt-4o-mini', messages });
 * ```
 */
export class SvcClient {
  /** Where svc listens, without trailing slashes. */
  readonly baseUrl: string;
  /** Sent as `X-Svc-App` on chat. */
  readonly app: string;
  /** Sent as `X-Svc-Agent` on chat when set. */
  readonly agent: string | undefined;
  /** Sent as `X-Svc-Subject` on chat and as `subject` on tool-cache calls when set. */
  readonly subject: string | undefined;
  /** The web-session methods. */
  readonly web: WebSessions;

  readonly #apiKey: string | undefined;

  constructor(options: SvcClientOptions = {}) {
    this.baseUrl = (options.baseUrl || DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.app = options.app || DEFAULT_APP;
    this.agent = options.agent || undefined;
    this.subject = options.subject || undefined;
    this.#apiKey = options.apiKey || undefined;
    this.web = Object.freeze({
      openSession: async (url: string) =>
        (await this.#request<WebSessionOpened>('POST', '/api/v1/web/sessions', { url })).data,
      act: async (sessionId: string, intent: WebIntent) =>
        (
          await this.#request<WebActResponse>('POST', `/api/v1/web/sessions/${seg(sessionId)}/act`, {
            action: intent.action,
            target: intent.target,
            value: intent.value,
          })
        ).data,
      closeSession: async (sessionId: string) =>
        (await this.#request<WebSessionClosed>('DELETE', `/api/v1/web/sessions/${seg(sessionId)}`)).data,
      listSessions: async () => (await this.#request<WebSessionList>('GET', '/api/v1/web/sessions')).data,
    });
  }

  /**
   * chat sends a chat-completions request (never streamed) with the
   * client's app, agent and subject headers, and returns the answer's text,
   * the tools it called, the run svc recorded and the route it took.
   */
  async chat(request: ChatRequest, options: CallOptions = {}): Promise<ChatResult> {
    const { data, headers } = await this.#request<ChatCompletion>(
      'POST',
      CHAT_PATH,
      { ...withoutStreamOptions(request), stream: false },
      this.#identity(),
      options.signal,
    );
    const message = data?.choices?.[0]?.message;
    const content = message?.content;
    const toolCalls = message?.tool_calls;
    return {
      content: typeof content === 'string' ? content : '',
      toolCalls: Array.isArray(toolCalls) ? toolCalls : [],
      runId: headers.get('x-svc-run-id') || '',
      route: headers.get('x-svc-route') || 'live',
      raw: data,
    };
  }

  /**
   * chatStream sends a streamed chat-completions request with the client's
   * app, agent and subject headers. It resolves once svc has answered, with
   * the run and route from the headers, and the chunks to read with
   * `for await`. A status outside 2xx, or an error event in the stream,
   * throws an SvcApiError; leaving the loop early, `close()`, or aborting
   * `options.signal` closes the connection.
   *
   * ```ts
   * const stream = await svc.chatStream({ model, messages });
   * console.log(stream.runId, stream.route);
   * for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta.content ?? '');
   * ```
   */
  async chatStream(request: ChatStreamRequest, options: CallOptions = {}): Promise<ChatStream> {
    const headers = { ...this.#identity(), Accept: 'text/event-stream' };
    const res = await this.#send('POST', CHAT_PATH, { ...request, stream: true }, headers, options.signal);
    const type = res.headers.get('content-type') ?? '';
    if (!/^text\/event-stream\b/i.test(type) || !res.body) {
      await res.body?.cancel().catch(() => {});
      throw new Error(`Svc-API POST ${CHAT_PATH} answered ${res.status} with ${type || 'no content type'}, not an event stream`);
    }
    return new EventChunks(res, res.body.getReader(), (text) => this.#mask(text), options.signal);
  }

  /**
   * traceTool wraps a tool so that each call is traced on the run named by
   * `ctx.runId`, read-only tools with a TTL are answered from svc's
   * tool-result cache, and side effects are announced before they happen.
   * Trace and cache failures never fail the call; whatever `execute` throws
   * reaches the caller unchanged.
   */
  traceTool<A = unknown, R = unknown>(tool: ToolDefinition<A, R>): TracedTool<A, R> {
    const level = tool.sideEffectLevel ?? DEFAULT_SIDE_EFFECT_LEVEL;
    if (!Number.isInteger(level) || level < 0 || level > 4) {
      throw new RangeError(`svc-client: sideEffectLevel of tool ${tool.name} must be 0 to 4, not ${level}`);
    }
    const ttl = tool.ttlSeconds;
    const cacheable = level <= 1 && typeof ttl === 'number' && ttl > 0;
    const { name, execute } = tool;
    return async (args: A, ctx: ToolContext = {}): Promise<R> => {
      const runId = ctx?.runId || undefined;
      // 1. A read-only tool with a TTL is first looked up in the cache.
      if (cacheable) {
        const cached = await this.toolCacheCheck<R>(name, args);
        if (cached.hit) {
          if (runId) await this.#quietTrace(runId, 'tool.completed', { name, result: cached.result, cached: true });
          return cached.result as R;
        }
      }
      // 2. and 3. The call, and the side effect it is about to have.
      if (runId) {
        await this.#quietTrace(runId, 'tool.called', { name, args, sideEffectLevel: level });
        if (level >= 2) await this.#quietTrace(runId, 'side_effect.planned', { toolName: name, level, payload: args });
      }
      // 4. The work; an error propagates as it is.
      const result = await execute(args, ctx ?? {});
      // 5. and 6. Its completion, and its result for the next caller.
      if (runId) await this.#quietTrace(runId, 'tool.completed', { name, result });
      if (cacheable) await this.toolCacheStore(name, args, result, ttl);
      return result;
    };
  }

  /** trace appends an event to a run's trace (`POST /api/v1/trace`). */
  async trace(runId: string, type: Open<TraceEventType>, payload: Record<string, unknown>): Promise<TraceResult> {
    return (await this.#request<TraceResult>('POST', '/api/v1/trace', { runId, type, payload })).data;
  }

  /** feedback rates a run's answer: 1 good, -1 bad, with an optional correction. */
  async feedback(runId: string, rating: 1 | -1, correction?: string): Promise<FeedbackResult> {
    return (
      await this.#request<FeedbackResult>('POST', `/api/v1/runs/${seg(runId)}/feedback`, {
        type: 'rating',
        rating,
        correction,
      })
    ).data;
  }

  /** fetchSom fetches url and compiles it to the Semantic Object Model (`POST /api/v1/web/fetch`). */
  async fetchSom(url: string, options: FetchSomOptions = {}): Promise<SomFetchResult> {
    return (
      await this.#request<SomFetchResult>('POST', '/api/v1/web/fetch', { url, bypassCache: options.bypassCache })
    ).data;
  }

  /** savings returns what the tenant's runs cost and what svc saved them. */
  async savings(): Promise<SavingsSummary> {
    return (await this.#request<SavingsSummary>('GET', '/api/v1/savings')).data;
  }

  /**
   * budgets lists the tenant's budgets, each with its current window and,
   * where it names one counter, what that counter holds (`spent`).
   */
  async budgets(): Promise<Budget[]> {
    const { data } = await this.#request<{ budgets?: Budget[] }>('GET', '/api/v1/budgets');
    return data?.budgets ?? [];
  }

  /** setBudgets makes list the tenant's budgets (admin); an empty list clears them. It returns them as stored. */
  async setBudgets(list: BudgetInput[]): Promise<Budget[]> {
    const { data } = await this.#request<{ budgets?: Budget[] }>('PUT', '/api/v1/budgets', { budgets: list });
    return data?.budgets ?? [];
  }

  /** putBudget replaces the budget of budget.id, or adds it (admin); it returns the tenant's budgets. */
  async putBudget(budget: BudgetInput): Promise<Budget[]> {
    const { data } = await this.#request<{ budgets?: Budget[] }>('PUT', '/api/v1/budgets', budget);
    return data?.budgets ?? [];
  }

  /** deleteBudget removes the tenant's budget id (admin); an unknown id throws a 404 SvcApiError. */
  async deleteBudget(id: string): Promise<void> {
    await this.#request<void>('DELETE', `/api/v1/budgets/${seg(id)}`);
  }

  /** spend reads one scope's spend counters over the current window (svc's defaults: the tenant's day). */
  async spend(query: SpendQuery = {}): Promise<SpendReport> {
    const params = new URLSearchParams();
    if (query.scope) params.set('scope', query.scope);
    if (query.window) params.set('window', query.window);
    const q = params.toString();
    return (await this.#request<SpendReport>('GET', q ? `/api/v1/spend?${q}` : '/api/v1/spend')).data;
  }

  /** patterns lists the patterns svc discovered; an answer without a list is an empty list. */
  async patterns(): Promise<Pattern[]> {
    const { data } = await this.#request<{ patterns?: Pattern[] }>('GET', '/api/v1/patterns');
    return data?.patterns ?? [];
  }

  /** artifacts lists the learned artifacts; an answer without a list is an empty list. */
  async artifacts(): Promise<Artifact[]> {
    const { data } = await this.#request<{ artifacts?: Artifact[] }>('GET', '/api/v1/artifacts');
    return data?.artifacts ?? [];
  }

  /** artifactDetail returns an artifact with its evaluations and its pattern. */
  async artifactDetail(id: string): Promise<ArtifactDetail> {
    return (await this.#request<ArtifactDetail>('GET', `/api/v1/artifacts/${seg(id)}`)).data;
  }

  /** runDetail returns a run with its events and side effects. */
  async runDetail(id: string): Promise<RunDetail> {
    return (await this.#request<RunDetail>('GET', `/api/v1/runs/${seg(id)}`)).data;
  }

  /** cacheStats returns the entries and hits of each cache tier. */
  async cacheStats(): Promise<CacheStats> {
    return (await this.#request<CacheStats>('GET', '/api/v1/cache/stats')).data;
  }

  /** learningTick runs one learning pass now (admin) and returns its report. */
  async learningTick(): Promise<LearningReport> {
    return (await this.#request<LearningReport>('POST', '/api/v1/learning/tick')).data;
  }

  /** promoteArtifact promotes an artifact that passed its gates (admin) and returns it. */
  async promoteArtifact(id: string): Promise<Artifact> {
    const { data } = await this.#request<{ artifact: Artifact }>('POST', `/api/v1/artifacts/${seg(id)}/promote`);
    return data?.artifact;
  }

  /**
   * toolCacheCheck looks a tool result up in svc's tool-result cache. It
   * never throws: any failure is a miss.
   */
  async toolCacheCheck<R = unknown>(toolName: string, args: unknown): Promise<ToolCacheCheckResult<R>> {
    try {
      const { data } = await this.#request<ToolCacheCheckResult<R>>('POST', '/api/v1/tool-cache/check', {
        toolName,
        subject: this.subject,
        args,
      });
      if (data?.hit === true) return { hit: true, result: data.result as R };
    } catch {
      // A cache that cannot answer is a miss.
    }
    return { hit: false };
  }

  /**
   * toolCacheStore keeps a tool result in svc's tool-result cache for
   * ttlSeconds (svc's default when absent). It never throws; it reports
   * whether svc stored the result.
   */
  async toolCacheStore(toolName: string, args: unknown, result: unknown, ttlSeconds?: number): Promise<boolean> {
    try {
      await this.#request('POST', '/api/v1/tool-cache/store', {
        toolName,
        subject: this.subject,
        args,
        result,
        ttlSeconds,
      });
      return true;
    } catch {
      return false;
    }
  }

  /** #quietTrace traces and forgets: a trace that fails never fails a tool. */
  async #quietTrace(runId: string, type: string, payload: Record<string, unknown>): Promise<void> {
    try {
      await this.trace(runId, type, payload);
    } catch {
      // Tracing is best effort.
    }
  }

  /** #identity is the headers that name the caller on chat. */
  #identity(): Record<string, string> {
    const headers: Record<string, string> = { 'X-Svc-App': this.app };
    if (this.agent) headers['X-Svc-Agent'] = this.agent;
    if (this.subject) headers['X-Svc-Subject'] = this.subject;
    return headers;
  }

  /**
   * #send sends one request and returns svc's answer with its body unread.
   * A status outside 2xx throws an SvcApiError; a network failure throws
   * fetch's own error.
   */
  async #send(method: Method, path: string, body?: unknown, extra?: Record<string, string>, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { Accept: 'application/json', ...extra };
    if (this.#apiKey) headers['Authorization'] = `Bearer ${this.#apiKey}`;
    const init: RequestInit = { method, headers };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    if (signal) init.signal = signal;
    const res = await fetch(this.baseUrl + path, init);
    if (!res.ok) {
      let text: string;
      try {
        text = await res.text();
      } catch {
        text = ''; // the status says enough
      }
      throw new SvcApiError(method, path, res.status, res.statusText, this.#mask(text));
    }
    return res;
  }

  /** #request sends one request and reads its JSON answer (see #send). */
  async #request<T>(
    method: Method,
    path: string,
    body?: unknown,
    extra?: Record<string, string>,
    signal?: AbortSignal,
  ): Promise<Answer<T>> {
    const res = await this.#send(method, path, body, extra, signal);
    const text = await res.text();
    if (text === '') return { data: undefined as T, headers: res.headers };
    let data: T;
    try {
      data = JSON.parse(text) as T;
    } catch {
      throw new Error(`Svc-API ${method} ${path} answered ${res.status} with a body that is not JSON: ${excerpt(this.#mask(text))}`);
    }
    return { data, headers: res.headers };
  }

  /** #mask hides the client's API key in text that may end up in a message. */
  #mask(text: string): string {
    return this.#apiKey ? text.split(this.#apiKey).join('[api key]') : text;
  }
}

/** seg escapes one path segment. */
/**
 * withoutStreamOptions drops stream_options, which a streamed request may
 * carry (a ChatStreamRequest passes for a ChatRequest) and svc refuses on a
 * request that is not streamed.
 */
function withoutStreamOptions(request: ChatRequest): ChatRequest {
  if (!('stream_options' in request)) return request;
  const { stream_options: _, ...rest } = request as ChatRequest & { stream_options?: unknown };
  return rest;
}

function seg(s: string): string {
  return encodeURIComponent(s);
}

/**
 * EventChunks is a ChatStream: the chunks of an event stream, read once.
 * Its reader is cancelled when the stream ends, fails, or is left early.
 */
class EventChunks implements ChatStream {
  readonly runId: string;
  readonly route: Open<Route>;
  readonly #res: Response;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #mask: (text: string) => string;
  readonly #signal: AbortSignal | undefined;
  #iterated = false;
  #closed = false;

  constructor(
    res: Response,
    reader: ReadableStreamDefaultReader<Uint8Array>,
    mask: (text: string) => string,
    signal?: AbortSignal,
  ) {
    this.runId = res.headers.get('x-svc-run-id') || '';
    this.route = res.headers.get('x-svc-route') || 'live';
    this.#res = res;
    this.#reader = reader;
    this.#mask = mask;
    this.#signal = signal;
  }

  [Symbol.asyncIterator](): AsyncIterator<ChatCompletionChunk> {
    if (this.#iterated) throw new Error('svc-client: a chat stream can be read once');
    this.#iterated = true;
    return this.#chunks();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#reader.cancel().catch(() => {});
  }

  async *#chunks(): AsyncGenerator<ChatCompletionChunk, void, undefined> {
    const parser = new SseParser();
    const events: SseEvent[] = [];
    try {
      for (;;) {
        const { done, value } = await this.#reader.read();
        if (this.#closed) return;
        if (done) parser.end(events);
        else parser.push(value, events);
        for (const e of events) {
          if (this.#closed) return; // closed between two chunks of one read
          this.#signal?.throwIfAborted(); // aborted between two chunks of one read
          if (e.event === 'error') throw this.#failed(e.data);
          if (e.event !== 'message' || e.data === '') continue;
          if (e.data === '[DONE]') return;
          yield this.#chunk(e.data);
        }
        events.length = 0;
        if (done) throw new Error(`Svc-API POST ${CHAT_PATH}: the event stream ended before data: [DONE]`);
      }
    } finally {
      await this.close();
    }
  }

  /** #chunk parses an event's data: a chunk, or an error object to throw. */
  #chunk(data: string): ChatCompletionChunk {
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new Error(`Svc-API POST ${CHAT_PATH} sent an event that is not JSON: ${excerpt(this.#mask(data))}`);
    }
    if (typeof chunk !== 'object' || chunk === null || 'error' in chunk) throw this.#failed(data);
    return chunk as ChatCompletionChunk;
  }

  /**
   * #failed is the error an event reports (an `error` event, or data that
   * is an error object, as svc writes a failure that comes after the
   * status): the stream's status, with the event's data as the body.
   */
  #failed(data: string): SvcApiError {
    return new SvcApiError('POST', CHAT_PATH, this.#res.status, this.#res.statusText, this.#mask(data));
  }
}
