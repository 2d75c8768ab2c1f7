// Types of what svc sends and receives. They mirror the service's JSON:
// field names, nesting and optionality follow the Go handlers and the
// service specification. Timestamps are RFC 3339 strings; money is USD.

/**
 * One of the values T svc sends today, or one a newer svc may add. A plain
 * `T | string` is just `string` to the compiler, and editors stop
 * suggesting T; `string & {}` accepts every string and keeps T in sight.
 */
export type Open<T extends string> = T | (string & {});

// ---------------------------------------------------------------- client

/** Options of a {@link SvcClient}. Every option is optional. */
export interface SvcClientOptions {
  /** Where svc listens. Default `http://localhost:4100`; trailing slashes are stripped. */
  baseUrl?: string;
  /** Bearer token sent as `Authorization: Bearer <apiKey>` on every request. Never readable back. */
  apiKey?: string;
  /** Logical app id, sent as `X-Svc-App` on chat. Default `default-app`. */
  app?: string;
  /** Agent id or name, sent as `X-Svc-Agent` on chat. */
  agent?: string;
  /** Pseudonymous subject, sent as `X-Svc-Subject` on chat and as `subject` on tool-cache calls. */
  subject?: string;
}

/** The side-effect level of a tool: 0 and 1 read, 2 to 4 change things. */
export type SideEffectLevel = 0 | 1 | 2 | 3 | 4;

/** What a traced tool is called with besides its arguments. */
export interface ToolContext {
  /** The run the call belongs to; without it the tool runs untraced. */
  runId?: string;
}

/** A tool to wrap with {@link SvcClient.traceTool}. */
export interface ToolDefinition<A = unknown, R = unknown> {
  /** The tool's name, as traced and as the cache key's tool. */
  name: string;
  /** 0 to 4; default 3. Only levels 0 and 1 may be cached. */
  sideEffectLevel?: SideEffectLevel;
  /** How long a result may be served from the tool-result cache; caching is off unless it is above 0. */
  ttlSeconds?: number;
  /** Does the work. Whatever it throws reaches the caller unchanged. */
  execute: (args: A, ctx: ToolContext) => R | Promise<R>;
}

/** A tool wrapped by {@link SvcClient.traceTool}. */
export type TracedTool<A = unknown, R = unknown> = (args: A, ctx?: ToolContext) => Promise<R>;

// ------------------------------------------------------------------ chat

/** Who speaks in a chat message. */
export type ChatRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

/** A text part of a message's content. */
export interface ChatTextPart {
  type: 'text';
  text: string;
}

/** An image part of a user message's content. */
export interface ChatImagePart {
  type: 'image_url';
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' };
}

/** A part of a message's content. */
export type ChatContentPart = ChatTextPart | ChatImagePart;

/**
 * One chat message. An assistant message that called tools carries its
 * `tool_calls` (its content may be null); each answer goes back as a `tool`
 * message naming the call in `tool_call_id`.
 */
export interface ChatMessage {
  role: Open<ChatRole>;
  content: string | ChatContentPart[] | null;
  /** A name that tells participants of the same role apart. */
  name?: string;
  /** On an assistant message: the calls it made. */
  tool_calls?: ToolCall[];
  /** On a tool message: the id of the call it answers. */
  tool_call_id?: string;
}

/** A JSON Schema object, as a function's parameters are described. */
export type JsonSchema = { [key: string]: unknown };

/** A function the model may call. */
export interface FunctionDefinition {
  name: string;
  description?: string;
  /** The function's arguments, as a JSON Schema object. */
  parameters?: JsonSchema;
  strict?: boolean | null;
}

/** A tool offered to the model: a function. */
export interface ChatTool {
  type: 'function';
  function: FunctionDefinition;
}

/**
 * Whether the model calls a tool: `auto` (it decides), `none`, `required`
 * (some tool), or the named function.
 */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** A call the model made. `arguments` is JSON text, as the model wrote it: parse it with care. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A chat-completions request. {@link SvcClient.chat} always sends `stream` as false. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  response_format?: unknown;
  /** Functions the model may call. */
  tools?: ChatTool[];
  /** Whether, and which, tool the model calls. */
  tool_choice?: ToolChoice;
}

/** A streamed chat-completions request. {@link SvcClient.chatStream} always sends `stream` as true. */
export interface ChatStreamRequest extends ChatRequest {
  /** `include_usage` adds a last chunk with the usage and no choices. */
  stream_options?: { include_usage?: boolean };
}

/** Options of one call. */
export interface CallOptions {
  /** Aborts the request; a stream being read stops and its connection closes. */
  signal?: AbortSignal;
}

/** The route a run took. */
export type Route = 'live' | 'exact_cache' | 'artifact' | 'blocked';

/** Why the model stopped. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

/** Token counts of an answer. */
export interface ChatUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  [key: string]: unknown;
}

/** The message of a chat completion's choice. */
export interface ChatCompletionMessage {
  role: Open<'assistant'>;
  /** The text; null when the model only called tools. */
  content: string | null;
  refusal?: string | null;
  tool_calls?: ToolCall[];
  [key: string]: unknown;
}

/** The chat-completions body as the provider (or svc for it) answered. */
export interface ChatCompletion {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices?: Array<{
    index?: number;
    message?: ChatCompletionMessage;
    finish_reason?: Open<FinishReason> | null;
    [key: string]: unknown;
  }>;
  usage?: ChatUsage;
  [key: string]: unknown;
}

/** What {@link SvcClient.chat} returns. */
export interface ChatResult {
  /** `choices[0].message.content`, or `''`. */
  content: string;
  /** `choices[0].message.tool_calls`, or `[]`. */
  toolCalls: ToolCall[];
  /** The `x-svc-run-id` header, or `''`. */
  runId: string;
  /** The `x-svc-route` header, or `'live'`. */
  route: Open<Route>;
  /** The whole response body. */
  raw: ChatCompletion;
}

/**
 * A piece of a streamed tool call. The first piece of a call has its `id`,
 * `type` and `function.name`; the pieces after it add to
 * `function.arguments`. `index` tells the calls of one answer apart.
 */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

/** What one chunk adds to the answer's message. */
export interface ChatCompletionDelta {
  role?: Open<'assistant'>;
  content?: string | null;
  refusal?: string | null;
  tool_calls?: ToolCallDelta[];
  [key: string]: unknown;
}

/** One chunk of a streamed answer (`chat.completion.chunk`). */
export interface ChatCompletionChunk {
  id: string;
  object: Open<'chat.completion.chunk'>;
  created: number;
  model: string;
  system_fingerprint?: string | null;
  /** Empty on the usage chunk that `stream_options.include_usage` asks for. */
  choices: Array<{
    index: number;
    delta: ChatCompletionDelta;
    finish_reason: Open<FinishReason> | null;
    logprobs?: unknown;
    [key: string]: unknown;
  }>;
  usage?: ChatUsage | null;
  [key: string]: unknown;
}

/**
 * What {@link SvcClient.chatStream} returns once svc has answered: the run
 * and route from the headers, and the chunks to iterate once with
 * `for await`. Leaving the loop early closes the connection; a stream
 * that is not read keeps it open until `close()`.
 */
export interface ChatStream extends AsyncIterable<ChatCompletionChunk> {
  /** The `x-svc-run-id` header, or `''`. */
  readonly runId: string;
  /** The `x-svc-route` header, or `'live'`. */
  readonly route: Open<Route>;
  /** Stops reading and closes the connection; a loop over the chunks then ends. */
  close(): Promise<void>;
}

// ------------------------------------------------------------------ runs

/** What a policy rule decides. */
export type PolicyEffect = 'allow' | 'deny' | 'require_approval';

/** A policy rule that matched. */
export interface RuleResult {
  id: string;
  effect: Open<PolicyEffect>;
  reason: string;
  /** Set when the rule's condition failed (a failing deny or require_approval rule counts as matched). */
  error?: string;
}

/** A policy decision. */
export interface Verdict {
  decision: Open<PolicyEffect>;
  rules: RuleResult[];
  /** Whether the decision stopped the call (false in observe mode). */
  enforced: boolean;
  /** The approval a held request opened, or the one that let it pass. */
  approvalId?: string;
}

/** A route a run did not take, and why. */
export interface RouteAlternative {
  route: Open<Route>;
  reason: string;
  /** The provider instance not tried, when the alternative is one. */
  provider?: string;
}

/** One call to one provider instance, in `routeExplanation.attempts`. */
export interface RouteAttempt {
  provider: string;
  /** The model named upstream. */
  model: string;
  outcome: Open<'ok' | 'error' | 'timeout' | 'rate_limited' | 'unavailable' | 'refused' | 'cancelled'>;
  /** The provider's HTTP status, when it answered with one. */
  status?: number;
  latencyMs: number;
  error?: string;
  retryAfterMs?: number;
  /** The backoff waited before this attempt. */
  waitedMs?: number;
}

/** A provider instance a call could go to, in `routeExplanation.candidates`. */
export interface RouteCandidate {
  provider: string;
  plugin: string;
  model: string;
}

/** `routeExplanation.cache`: the exact-cache lookup of a run. */
export interface RouteCacheDetail {
  tier: string;
  cacheable: boolean;
  lookup: Open<'miss' | 'fresh' | 'stale' | 'skipped'>;
  served: boolean;
  sourceRunId?: string;
  storedAt?: string;
  expiresAt?: string;
}

/**
 * `routeExplanation.fallback`: a cached answer stood in for a provider that
 * failed, or (tier `provider`) another provider answered after the first
 * tried failed.
 */
export interface RouteFallbackDetail {
  used: boolean;
  reason: string;
  tier: string;
  stale?: boolean;
  storedAt?: string;
  /** Tier `provider`: the provider that answered. */
  provider?: string;
  /** Tier `provider`: the first provider tried. */
  from?: string;
}

/** Why a run took its route and what it passed over. */
export interface RouteExplanation {
  route: Open<Route>;
  reason: string;
  rejected: RouteAlternative[] | null;
  policy: Verdict;
  cache: RouteCacheDetail | null;
  artifact: Record<string, unknown> | null;
  estimatedSavingsUsd: number;
  fallback: RouteFallbackDetail | null;
  /** The provider instance that answered. */
  provider?: string;
  /** Every call to a provider, in order. */
  attempts?: RouteAttempt[];
  /** The providers the call could go to, in the order they would be tried. */
  candidates?: RouteCandidate[];
}

/** One gateway call. */
export interface Run {
  id: string;
  createdAt: string;
  route: Open<Route>;
  status: Open<'ok' | 'error' | 'blocked'>;
  httpStatus: number;
  model: string;
  app: string;
  agent: string;
  subject: string;
  mode: Open<'observe' | 'optimize'>;
  keyId?: string;
  provider: string;
  stream: boolean;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  usageUnknown: boolean;
  costUsd: number;
  priceUnknown: boolean;
  latencyMs: number;
  /** The W3C trace id of the call, when it had one (svc's span, or the caller's traceparent passed on). */
  traceId?: string;
  savedUsd: number;
  savedMs: number;
  ghostSavedUsd: number;
  routeExplanation: RouteExplanation;
  error?: string;
  eventCount: number;
  /** The chat-completions request; only on a run's detail. */
  request?: unknown;
  /** The chat-completions response; only on a run's detail. */
  response?: unknown;
}

/** The trace events an agent appends through {@link SvcClient.trace}; svc records others of its own. */
export type TraceEventType = 'tool.called' | 'tool.completed' | 'side_effect.planned';

/** One entry of a run's hash-chained trace. */
export interface RunEvent {
  seq: number;
  type: Open<TraceEventType>;
  at: string;
  payload: unknown;
  prevHash: string;
  hash: string;
}

/** Something a tool of a run changes outside svc. */
export interface SideEffect {
  id: string;
  runId: string;
  toolName: string;
  level: number;
  payload: unknown;
  state: Open<'planned' | 'executed' | 'suppressed' | 'blocked'>;
  ruleId?: string;
  reason?: string;
  approvalId?: string;
  plannedSeq: number;
  createdAt: string;
  updatedAt: string;
}

/** `GET /api/v1/runs/:id`. */
export interface RunDetail {
  run: Run;
  events: RunEvent[];
  sideEffects: SideEffect[];
}

/** `POST /api/v1/trace`. */
export interface TraceResult {
  event: { seq: number; type: Open<TraceEventType>; hash: string };
  /** The tool policies' verdict on a `tool.called` or `side_effect.planned` event. */
  verdict?: Verdict;
  /** The record a `side_effect.planned` event created. */
  sideEffect?: SideEffect;
}

/** A person's rating of a run. */
export interface Feedback {
  id: string;
  runId: string;
  rating: 1 | -1;
  correction?: string;
  createdAt: string;
}

/** `POST /api/v1/runs/:id/feedback`. */
export interface FeedbackResult {
  feedback: Feedback;
}

// --------------------------------------------------------------- savings

/** One UTC day of the savings series. */
export interface SavingsDay {
  /** YYYY-MM-DD. */
  day: string;
  runs: number;
  optimizedRuns: number;
  costUsd: number;
  savedUsd: number;
  ghostSavedUsd: number;
}

/** `GET /api/v1/savings`: what the tenant's runs cost and what svc saved. */
export interface SavingsSummary {
  totalRuns: number;
  liveRuns: number;
  optimizedRuns: number;
  blockedRuns: number;
  totalCostUsd: number;
  totalSavedUsd: number;
  /** What observe-mode runs would have saved. */
  ghostSavedUsd: number;
  totalSavedMs: number;
  cacheHitRate: number;
  artifactHitRate: number;
  somTokensSaved: number;
  /** The start of the window, or null for all runs. */
  since?: string | null;
  daily?: SavingsDay[];
}

// ------------------------------------------------------ budgets and spend

/** Whose spend a counter or a budget is about: the whole tenant, or one app, API key, agent or subject of it. */
export type SpendScope = 'tenant' | 'app' | 'key' | 'agent' | 'subject';

/** The current hour, day or calendar month, in the tenant's time zone (setting `timezone`). */
export type SpendWindow = 'hour' | 'day' | 'month';

/** What a budget does at its limit: `hard` refuses calls (429 `budget_exceeded`), `soft` only alerts. */
export type BudgetKind = 'hard' | 'soft';

/** What a spend counter holds. */
export interface SpendAmount {
  usd: number;
  tokens: number;
  /** Calls a provider answered or failed. */
  requests: number;
  /** Answers of the exact cache and of artifacts, which cost nothing. */
  hits: number;
}

/** A budget as `setBudgets` and `putBudget` send it; at least one limit is set. */
export interface BudgetInput {
  /** Unique in the tenant; when absent, svc makes one of the scope, match and window. */
  id?: string;
  scope: SpendScope;
  /** The one value of the scope limited (an app's name, a key's id, …); absent: each value separately. */
  match?: string;
  window: SpendWindow;
  /** `hard` when absent. */
  kind?: BudgetKind;
  limitUsd?: number;
  limitTokens?: number;
  limitRequests?: number;
  description?: string;
}

/** A budget as svc answers it (`GET /api/v1/budgets` adds its window and, where it names one counter, `spent`). */
export interface Budget {
  id: string;
  scope: Open<SpendScope>;
  match?: string;
  window: Open<SpendWindow>;
  kind: Open<BudgetKind>;
  limitUsd?: number;
  limitTokens?: number;
  limitRequests?: number;
  description?: string;
  /** The start of the current window (RFC 3339). */
  windowStart?: string;
  /** When the current window ends and its counters start again. */
  resetsAt?: string;
  /** What the budget's counter holds now, when it names one counter (the tenant's, or a `match`). */
  spent?: SpendAmount;
}

/** Which counters `spend` reads; svc's defaults are the tenant's, over the day. */
export interface SpendQuery {
  scope?: SpendScope;
  window?: SpendWindow;
}

/** One value of the scope (`""` for the tenant) and its counters. */
export interface SpendItem extends SpendAmount {
  key: string;
}

/** `GET /api/v1/spend`: one scope's counters over the current window, highest cost first. */
export interface SpendReport {
  scope: Open<SpendScope>;
  window: Open<SpendWindow>;
  /** The tenant's time zone, an IANA name. */
  timezone: string;
  windowStart: string;
  resetsAt: string;
  items: SpendItem[];
}

// ----------------------------------------------------------------- cache

/** A cache tier. */
export type CacheType = 'exact_response' | 'tool_result' | 'som' | 'negative';

/** One tier's figures for the tenant. */
export interface CacheStat {
  cacheType: Open<CacheType>;
  entries: number;
  /** Hits since the service started. */
  hits: number;
}

/** `GET /api/v1/cache/stats`. */
export interface CacheStats {
  stats: CacheStat[];
}

/** `POST /api/v1/tool-cache/check`, and what {@link SvcClient.toolCacheCheck} returns on any failure. */
export interface ToolCacheCheckResult<R = unknown> {
  hit: boolean;
  result?: R;
}

// ------------------------------------------------------ learning loop

/** A pattern's lifecycle state. */
export type PatternState = 'observed' | 'candidate' | 'shadow' | 'promoted' | 'negative' | 'retired';

/** An artifact's state: only a promoted artifact serves. */
export type ArtifactState = 'shadow' | 'promoted' | 'quarantined' | 'retired';

/** A kind of request svc keeps seeing. */
export interface Pattern {
  id: string;
  state: Open<PatternState>;
  fingerprints: unknown;
  runCount: number;
  avgCostUsd: number;
  avgLatencyMs: number;
  stabilityScore: number;
  optimizableScore: number;
  /** The shape fingerprint (hex SHA-256). */
  key?: string;
  /** Why the pattern is in its state. */
  stateReason?: string;
  /** Runs rated down or corrected; they count against stability. */
  corrections?: number;
  /** The pattern's newest runs, newest first. */
  exampleRunIds?: string[];
  /** A pattern's detail adds its artifacts. */
  artifacts?: Artifact[];
  /** A pattern's detail adds example runs. */
  exampleRuns?: Run[];
  [key: string]: unknown;
}

/** Where an artifact came from. */
export interface ArtifactProvenance {
  sourceRunIds: string[];
  holdoutRunIds: string[];
  [key: string]: unknown;
}

/** A declarative answer learned from a pattern. */
export interface Artifact {
  id: string;
  patternId?: string;
  state: Open<ArtifactState>;
  /** Why the artifact is in its state. */
  stateReason?: string;
  type: Open<'classifier' | 'template' | 'extractor' | 'lookup'>;
  /** The declarative representation svc interprets (never code). */
  representation: unknown;
  provenance: ArtifactProvenance;
  /** Beta posterior: 1 + passes. */
  alpha: number;
  /** Beta posterior: 1 + fails. */
  beta: number;
  confidence: number;
  replayPass: number;
  replayFail: number;
  shadowPass: number;
  shadowFail: number;
  livePass: number;
  liveFail: number;
  /** The 5% quantile of the Beta posterior: promotion needs 0.9. */
  lowerBound?: number;
  /** The pattern offers tools: promotion needs `{confirm: true}`. */
  sideEffects?: boolean;
  /** Evaluations the artifact declined. */
  abstentions?: number;
  [key: string]: unknown;
}

/** One replay, shadow or live evidence row. */
export interface ArtifactEvaluation {
  id: string;
  artifactId: string;
  kind: Open<'replay' | 'shadow' | 'live'>;
  runId: string;
  outcome: Open<'pass' | 'fail' | 'abstain'>;
  expected: string;
  got: string;
  reason?: string;
  createdAt: string;
  [key: string]: unknown;
}

/** `GET /api/v1/artifacts/:id`. */
export interface ArtifactDetail {
  artifact: Artifact;
  evaluations: ArtifactEvaluation[];
  pattern: Pattern | null;
}

/** What a learning pass did. */
export interface LearningReport {
  artifactsSynthesized: number;
  /** Ids of artifacts that passed the gates. */
  promotionsEligible: string[];
  /** Ids of artifacts promoted hands-free (`SVC_AUTO_PROMOTE`). */
  autoPromoted: string[];
  synthesisReports?: Array<Record<string, unknown>>;
  [key: string]: unknown;
}

// ----------------------------------------------------------- semantic web

/** A region of a page: a form, the navigation, the main content … */
export interface SomRegion {
  /** `r_…`; form regions start `r_form`. */
  id: string;
  role?: string;
  label?: string;
  [key: string]: unknown;
}

/** An element of a page with a stable id. */
export interface SomElement {
  /** `e_…`. */
  id: string;
  kind?: string;
  region?: string;
  name?: string;
  text?: string;
  href?: string;
  [key: string]: unknown;
}

/** A page compiled to the Semantic Object Model. */
export interface SomSnapshot {
  regions: SomRegion[];
  elements: SomElement[];
  /** Facts about the page, byte counts among them. */
  meta: Record<string, unknown>;
  [key: string]: unknown;
}

/** The semantic difference from the previous snapshot of the same page. */
export interface SomDiff {
  /** 0 (nothing that matters changed) to 1. */
  driftScore: number;
  changes?: Array<Record<string, unknown>>;
  [key: string]: unknown;
}

/** `POST /api/v1/web/fetch`. */
export interface SomFetchResult {
  som: SomSnapshot;
  source: Open<'external' | 'builtin' | 'cache'>;
  cached: boolean;
  htmlBytes: number;
  somBytes: number;
  tokensSavedEstimate: number;
  /** Only when a previous snapshot of the page exists. */
  diff?: SomDiff;
  /** Compact prompt-ready text of the page. */
  context: string;
}

/** Options of {@link SvcClient.fetchSom}. */
export interface FetchSomOptions {
  /** Compile the page afresh instead of answering from the SOM cache. */
  bypassCache?: boolean;
}

/** A stateful web session. */
export interface WebSession {
  id: string;
  url: string;
  createdAt: string;
  lastActiveAt: string;
  [key: string]: unknown;
}

/** `POST /api/v1/web/sessions`. */
export interface WebSessionOpened {
  session: WebSession;
  som: SomSnapshot;
  context: string;
}

/** An action on an element of a session's page. */
export interface WebIntent {
  action: 'click' | 'type' | 'select' | 'submit';
  /** An element id (`e_…`), or a form region id (`r_form…`) for submit. */
  target: string;
  /** The text to type or the option to select. */
  value?: string;
}

/** What an action did. */
export interface WebActionResult {
  ok: boolean;
  action: Open<WebIntent['action']>;
  target: string;
  resolved?: unknown;
  navigated?: boolean;
  url: string;
  error?: string;
}

/** `POST /api/v1/web/sessions/:id/act`. */
export interface WebActResponse {
  result: WebActionResult;
  som: SomSnapshot;
  diff?: SomDiff;
  context: string;
}

/** `GET /api/v1/web/sessions`. */
export interface WebSessionList {
  sessions: WebSession[];
}

/** `DELETE /api/v1/web/sessions/:id`. */
export interface WebSessionClosed {
  ok: boolean;
}
