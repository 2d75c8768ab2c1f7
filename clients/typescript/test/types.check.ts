// Type checks of svc-client's declarations: `npm test` compiles this file
// (nothing runs it). A line that stops compiling is a failed check.

import type {
  Artifact,
  ArtifactEvaluation,
  Budget,
  BudgetInput,
  CacheStat,
  ChatCompletionChunk,
  ChatMessage,
  ChatRequest,
  ChatResult,
  ChatStream,
  Feedback,
  Open,
  Pattern,
  RouteAlternative,
  RouteCacheDetail,
  RouteExplanation,
  RuleResult,
  Run,
  RunEvent,
  SideEffect,
  SomFetchResult,
  SpendReport,
  ToolCall,
  ToolChoice,
  Verdict,
  WebActionResult,
} from 'svc-client';

/** true when T still names the value K: `K | string` is `string`, which names no value. */
type Names<T, K extends string> = [Extract<T, K>] extends [never] ? false : true;

/** true when T takes every string, as a value a newer svc may send. */
type TakesAnyString<T> = string extends T ? true : false;

/** Compiles only for true. */
function check<T extends true>(): T | void {}

// Each open field keeps its known values in sight and still takes any string.
check<Names<ChatResult['route'], 'exact_cache'>>();
check<Names<ChatStream['route'], 'artifact'>>();
check<Names<Run['route'], 'blocked'>>();
check<Names<RouteAlternative['route'], 'live'>>();
check<Names<RouteExplanation['route'], 'live'>>();
check<Names<Run['status'], 'ok'>>();
check<Names<Run['mode'], 'observe'>>();
check<Names<RuleResult['effect'], 'require_approval'>>();
check<Names<Verdict['decision'], 'deny'>>();
check<Names<RouteCacheDetail['lookup'], 'stale'>>();
check<Names<SideEffect['state'], 'suppressed'>>();
check<Names<CacheStat['cacheType'], 'tool_result'>>();
check<Names<Pattern['state'], 'candidate'>>();
check<Names<Artifact['state'], 'quarantined'>>();
check<Names<Artifact['type'], 'classifier'>>();
check<Names<ArtifactEvaluation['kind'], 'shadow'>>();
check<Names<ArtifactEvaluation['outcome'], 'abstain'>>();
check<Names<SomFetchResult['source'], 'cache'>>();
check<Names<WebActionResult['action'], 'submit'>>();
check<Names<RunEvent['type'], 'side_effect.planned'>>();
check<Names<ChatMessage['role'], 'tool'>>();
check<Names<ChatCompletionChunk['choices'][number]['finish_reason'], 'tool_calls'>>();
check<Names<Open<'a' | 'b'>, 'b'>>();
check<TakesAnyString<ChatResult['route']>>();
check<TakesAnyString<Run['status']>>();
check<TakesAnyString<ChatMessage['role']>>();
check<TakesAnyString<Open<'a'>>>();

// A rating is 1 or -1, nothing else.
const up: Feedback['rating'] = 1;
// @ts-expect-error: 2 is no rating
const two: Feedback['rating'] = 2;

// tool_choice takes the four OpenAI forms and nothing else.
const choices: ToolChoice[] = ['auto', 'none', 'required', { type: 'function', function: { name: 'get_weather' } }];
// @ts-expect-error: 'any' is not a tool choice
const wrongChoice: ToolChoice = 'any';

// A tool round: the assistant's call and the tool's answer are messages.
const call: ToolCall = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } };
const request: ChatRequest = {
  model: 'gpt-4o-mini',
  messages: [
    { role: 'user', content: 'Weather in Oslo?' },
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', tool_call_id: call.id, content: '{"tempC":21}' },
  ],
  tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
  tool_choice: 'auto',
};
// @ts-expect-error: a tool is a function tool
const notATool: ChatRequest['tools'] = [{ type: 'retrieval' }];

// A message built with a plain string role still fits, as the spec's {role: string, content: string}.
const plain: { role: string; content: string } = { role: 'user', content: 'hi' };
const fits: ChatMessage = plain;

// The answer's message goes back into the conversation as it is.
declare const result: ChatResult;
const again: ChatMessage[] = [...request.messages, result.raw.choices![0].message!];

export { again, choices, fits, notATool, two, up, wrongChoice };

// Budgets and spend: the answers' fields are open, what is sent is not.
check<Names<Budget['kind'], 'soft'>>();
check<Names<Budget['scope'], 'subject'>>();
check<Names<SpendReport['window'], 'month'>>();
check<TakesAnyString<Budget['window']>>();
// @ts-expect-error: a budget is sent with a scope svc knows.
const badScope: BudgetInput = { scope: 'team', window: 'day', limitUsd: 1 };
void badScope;
