// A run: what was asked and answered, why the gateway routed it as it did
// (in words), its trace ledger with the integrity checked now, its side
// effects and tool calls, feedback from the page, and its replay bundle.
import { h, clear, dl, pre, badge, section, table, form, field, link, button } from '../lib/dom.js';
import { money, ms, num, time, when } from '../lib/format.js';
import { page, load, problem, api, act } from '../lib/ui.js';
import { routeLabel, routeBadge, statusBadge } from './runs.js';

// WHERE names where each route's answer comes from.
const WHERE = {
  live: 'the provider, live',
  exact_cache: 'the exact cache',
  artifact: 'a promoted artifact',
};

// NOT says a route was not taken.
const NOT = {
  live: 'Not sent to the provider',
  exact_cache: 'Not from the exact cache',
  artifact: 'Not from an artifact',
  blocked: 'Not blocked',
};

const DECISIONS = {
  allow: 'allowed',
  deny: 'denied',
  require_approval: 'held for a person’s approval',
};

// BREAKS says in words what each integrity code of the ledger check
// (internal/ledger) found.
const BREAKS = {
  hash_mismatch: 'an event’s content was changed after it was recorded',
  prev_link_mismatch: 'an event’s link to the event before it was changed',
  sequence_gap: 'an event is missing or out of order',
  count_mismatch: 'events were removed from or added to the end of the ledger',
  head_mismatch: 'the last event is not the one the run recorded',
  no_events: 'the run has no events, though every recorded run has some',
  run_mismatch: 'the first event was not chained from this run',
};

function sentence(text) {
  const t = String(text || '').trim();
  if (!t) return '';
  return t.endsWith('.') || t.endsWith('!') || t.endsWith('?') ? t : t + '.';
}

// explain turns a run's route explanation (and the run's savings) into
// sentences a person reads. It is pure: each item is {text} and, where the
// sentence names a record, the id to link to (ruleId, runId, artifactId,
// approvalId).
export function explain(run) {
  const ex = (run && run.routeExplanation) || {};
  const out = [];
  const route = ex.route || run.route;
  const why = ex.reason ? `: ${sentence(ex.reason)}` : '.';
  out.push({ key: 'route', text: route === 'blocked' ? `This run was refused by a policy${why}`
    : `This run was answered from ${WHERE[route] || 'route ' + route}${why}` });

  const candidates = Array.isArray(ex.candidates) ? ex.candidates : [];
  if (candidates.length > 0) {
    const names = candidates.map((c) => (c.model ? `${c.provider} (${c.model})` : c.provider));
    out.push({ key: 'candidates', text: candidates.length === 1 ? `The only candidate provider was ${names[0]}.`
      : `The candidate providers, in the order they would be tried: ${names.join(', ')}.` });
  }
  const attempts = Array.isArray(ex.attempts) ? ex.attempts : [];
  if (ex.provider) {
    out.push({ key: 'provider', text: attempts.length > 1 ? `Provider ${ex.provider} answered, on attempt ${attempts.length} of the call.`
      : `Provider ${ex.provider} answered.` });
  } else if (attempts.length > 0) {
    out.push({ key: 'provider', text: `No provider answered: ${attempts.length === 1 ? 'the one attempt' : `all ${attempts.length} attempts`} failed.` });
  }

  for (const alt of ex.rejected || []) {
    const what = alt.provider ? `Not sent to provider ${alt.provider}` : NOT[alt.route] || 'Not ' + routeLabel(alt.route);
    out.push({ key: 'rejected', text: `${what}: ${sentence(alt.reason || 'not taken')}` });
  }

  const policy = ex.policy || {};
  const decision = policy.decision || 'allow';
  const rules = policy.rules || [];
  if (rules.length === 0) {
    out.push({ key: 'policy', text: `No policy rule matched; the request was ${DECISIONS[decision] || decision}.` });
  } else {
    let text = `The policy verdict: ${DECISIONS[decision] || decision}`;
    if (decision !== 'allow') {
      text += policy.enforced ? ', and enforced.' : ', but not enforced (observe mode records what would have happened).';
    } else {
      text += '.';
    }
    out.push({ key: 'policy', text, approvalId: policy.approvalId || undefined });
    for (const r of rules) {
      let t = `Rule ${r.id} matched (${DECISIONS[r.effect] || r.effect})`;
      t += r.reason ? `: ${sentence(r.reason)}` : '.';
      if (r.error) t += ` Its condition failed: ${sentence(r.error)}`;
      out.push({ key: 'rule', text: t, ruleId: r.id });
    }
  }
  if (policy.approvalId) {
    out.push({ key: 'approval', text: `Approval ${policy.approvalId} ${decision === 'require_approval' ? 'was opened for it' : 'let it pass'}.`, approvalId: policy.approvalId });
  }

  const c = ex.cache;
  if (c && typeof c === 'object') {
    let t;
    if (c.cacheable === false) t = 'The exact cache was not consulted: the request is not cacheable.';
    else if (c.served) t = `The exact cache held a ${c.lookup === 'stale' ? 'stale' : 'fresh'} answer and served it`;
    else if (c.lookup === 'fresh') t = 'The exact cache held a fresh answer, but did not serve it.';
    else if (c.lookup === 'stale') t = 'The exact cache held only a stale answer, which was not served.';
    else if (c.lookup === 'miss') t = 'The exact cache had no answer for this request.';
    else t = 'The exact cache was skipped.';
    if (c.served) {
      t += c.storedAt ? `, stored ${when(c.storedAt)}` : '';
      t += c.sourceRunId ? `, first answered by run ${c.sourceRunId}.` : '.';
    }
    out.push({ key: 'cache', text: t, runId: c.served && c.sourceRunId ? c.sourceRunId : undefined });
  }

  const a = ex.artifact;
  if (a && typeof a === 'object') {
    let t = `Artifact ${a.id}${a.state ? ` (${a.state})` : ''}`;
    if (a.served) t += a.canary ? ' served this run as a canary' : ' served this run';
    else if (a.abstained) t += ' abstained';
    else t += ' did not serve';
    t += a.reason ? `: ${sentence(a.reason)}` : '.';
    if (a.shadow) t += ` Its shadow evaluation: ${sentence(a.shadow)}`;
    out.push({ key: 'artifact', text: t, artifactId: a.id });
  }

  if (run.savedUsd > 0 || run.savedMs > 0) {
    out.push({ key: 'savings', text: `It saved ${money(run.savedUsd)} and ${ms(run.savedMs)} against the live call it avoided.` });
  } else if (run.ghostSavedUsd > 0) {
    out.push({ key: 'savings', text: `In optimize mode it would have saved ${money(run.ghostSavedUsd)} (ghost savings).` });
  } else if (ex.estimatedSavingsUsd > 0) {
    out.push({ key: 'savings', text: `The estimated saving was ${money(ex.estimatedSavingsUsd)}.` });
  } else {
    out.push({ key: 'savings', text: route === 'blocked' ? 'It saved nothing: the request was refused before any call.'
      : route === 'live' ? 'It saved nothing: the provider was called.' : 'It saved nothing.' });
  }

  const f = ex.fallback;
  if (f && typeof f === 'object' && f.used !== false && f.tier === 'provider') {
    // A provider fallback: the first provider tried failed and another
    // answered. (A fallback of another tier is a cached answer standing in.)
    let t = `Provider ${f.from || 'first tried'} failed, so provider ${f.provider || 'another'} answered instead`;
    t += f.reason ? `: ${sentence(f.reason)}` : '.';
    out.push({ key: 'fallback', text: t });
  } else if (f && typeof f === 'object' && f.used !== false) {
    let t = 'The provider failed, so a cached answer stood in';
    t += f.stale ? ' (a stale one)' : '';
    t += f.storedAt ? `, stored ${when(f.storedAt)}` : '';
    t += f.reason ? `: ${sentence(f.reason)}` : '.';
    out.push({ key: 'fallback', text: t });
  } else if (f) {
    out.push({ key: 'fallback', text: 'No fallback was needed.' });
  }
  return out;
}

export async function render(ctx) {
  const id = ctx.params.id;
  page(ctx, 'Run', h('code', {}, id));
  const [detail, settings] = await Promise.all([
    load(ctx, '/api/v1/runs/' + encodeURIComponent(id), 'This run'),
    api('GET', '/api/v1/settings'),
  ]);
  if (!detail) return;
  const run = detail.run;
  const events = detail.events || [];
  const root = ctx.root;
  root.append(h('p', { class: 'toolbar' }, link('#/runs', '← All runs')));

  root.append(section('Summary', dl([
    ['When', time(run.createdAt)],
    ['Route', routeBadge(run.route)],
    ['Status', [statusBadge(run.status), ` HTTP ${run.httpStatus}`]],
    ['Error', run.error || null],
    ['Model', run.model],
    ['Provider', run.provider || null],
    ['App', run.app || null],
    ['Agent', run.agent || null],
    ['Subject', run.subject || null],
    ['Key mode', run.mode || null],
    ['Trace id', run.traceId ? h('code', {}, run.traceId) : null],
    ['Tokens', run.usageUnknown ? 'unknown' : `${num(run.promptTokens)} in, ${num(run.completionTokens)} out`],
    ['Latency', ms(run.latencyMs)],
    ['Cost', run.priceUnknown ? 'unknown price' : money(run.costUsd)],
    ['Saved', run.savedUsd ? `${money(run.savedUsd)} and ${ms(run.savedMs)}` : null],
    ['Ghost-saved', run.ghostSavedUsd ? money(run.ghostSavedUsd) : null],
  ], { id: 'run-facts' })));

  root.append(section('Why this route', h('ul', { class: 'explanation', id: 'run-explanation' },
    explain(run).map((s) => h('li', { dataset: { part: s.key } }, s.text, ' ', explanationLink(s))))));

  const attempts = run.routeExplanation && Array.isArray(run.routeExplanation.attempts) ? run.routeExplanation.attempts : [];
  if (attempts.length > 0) root.append(section('Provider attempts', attemptsTable(attempts)));

  root.append(exchange(run, settings));

  const integrity = h('div', { id: 'run-integrity', 'aria-live': 'polite' }, h('p', { class: 'quiet' }, 'Checking the ledger…'));
  const ledger = h('div', { id: 'run-ledger' }, eventsTable(events));
  root.append(section('Trace ledger', integrity, ledger));

  // check reads the ledger's integrity now and says how it stands.
  const check = async () => {
    const res = await api('GET', '/api/v1/runs/' + encodeURIComponent(id) + '/integrity');
    if (!ctx.current()) return;
    clear(integrity, res.ok ? integrityBadge(res.data) : problem(res.error, 'The ledger could not be checked: '));
  };
  // reread draws the ledger again after feedback added an event to it, so
  // its table and its check agree.
  const reread = async () => {
    const res = await api('GET', '/api/v1/runs/' + encodeURIComponent(id));
    if (!ctx.current() || !res.ok) return;
    clear(ledger, eventsTable(res.data.events || []));
    await check();
  };

  root.append(section('Tool calls', toolCalls(run, events)));
  root.append(section('Side effects', sideEffects(detail.sideEffects || [])));
  root.append(feedbackSection(ctx, run, events, reread));
  root.append(bundleSection(ctx, run));

  await check();
}

function explanationLink(s) {
  if (s.ruleId) return link('#/policies/' + encodeURIComponent(s.ruleId), 'See the rule');
  if (s.runId) return link('#/runs/' + encodeURIComponent(s.runId), 'See that run');
  if (s.artifactId) return link('#/artifacts/' + encodeURIComponent(s.artifactId), 'See the artifact');
  if (s.approvalId) return link('#/approvals', 'See the approvals');
  return null;
}

// OUTCOMES colours an attempt's outcome (providers.Outcome*).
const OUTCOMES = { ok: 'ok', rate_limited: 'warn', cancelled: 'info' };

// attemptsTable lists every call the router made to a provider for this
// run, in order: who, which model upstream, how it ended and how long it took.
function attemptsTable(attempts) {
  return h('div', { id: 'run-attempts' }, table([
    { label: '#', class: 'num', cell: (a) => String(attempts.indexOf(a) + 1) },
    { label: 'Provider', cell: (a) => h('strong', {}, a.provider) },
    { label: 'Model', cell: (a) => (a.model ? h('code', {}, a.model) : '–') },
    { label: 'Outcome', cell: (a) => badge(a.outcome === 'ok' ? 'ok' : String(a.outcome || 'unknown').replace(/_/g, ' '), OUTCOMES[a.outcome] || 'bad') },
    { label: 'Status', class: 'num', cell: (a) => (a.status ? String(a.status) : '–') },
    { label: 'Latency', class: 'num', cell: (a) => [ms(a.latencyMs), a.waitedMs ? h('div', { class: 'quiet small' }, `after waiting ${ms(a.waitedMs)}`) : null] },
    { label: 'Error', cell: (a) => a.error || '–' },
  ], attempts, 'No attempt.', 'Provider attempts'));
}

// exchange shows the request and the answer as stored. With redaction on,
// svc masked them before storing them.
function exchange(run, settings) {
  const redacted = settings.ok && settings.data.settings && settings.data.settings.redaction === true;
  const answer = answerText(run.response);
  return section('Request and answer',
    redacted ? h('p', { class: 'note', id: 'run-redacted' },
      'Redaction is on for this organization: personal data and secrets in runs recorded while it is on were masked before they were stored ([email], [secret], [card], [ip], [phone]).') : null,
    h('h3', {}, 'Request'),
    run.request ? pre(run.request) : h('p', { class: 'empty' }, 'No request body was stored.'),
    h('h3', {}, 'Answer'),
    answer ? h('blockquote', { class: 'answer', id: 'run-answer' }, answer) : null,
    run.response ? h('details', {}, h('summary', {}, 'The whole answer'), pre(run.response)) : h('p', { class: 'empty' }, 'No answer was stored.'));
}

// answerText is the assistant's text of a chat-completions answer, if any.
function answerText(response) {
  if (!response || typeof response !== 'object' || !Array.isArray(response.choices)) return '';
  return response.choices.map((c) => (c && c.message && typeof c.message.content === 'string' ? c.message.content : '')).filter(Boolean).join('\n\n');
}

// integrityBadge says how the ledger check came out, in words.
export function integrityBadge(r) {
  if (r.ok) {
    return h('p', { class: 'integrity', dataset: { ok: 'true' } }, badge('Verified', 'ok'), ' ',
      `The hash chain of ${r.events === 1 ? '1 event' : num(r.events) + ' events'} is intact, recomputed just now.`);
  }
  const where = r.brokenAt !== null && r.brokenAt !== undefined ? ` at event ${r.brokenAt}` : '';
  const why = BREAKS[r.reason] || (r.reason ? `the check reports ${r.reason}` : 'the stored run does not match its hashes');
  return h('p', { class: 'integrity', dataset: { ok: 'false', reason: r.reason || '' }, role: 'alert' }, badge('Broken', 'bad'), ' ',
    `The chain breaks${where}: ${sentence(why)}`);
}

function eventsTable(events) {
  return table([
    { label: '#', cell: (e) => String(e.seq), class: 'num' },
    { label: 'Event', cell: (e) => h('code', {}, e.type) },
    { label: 'At', cell: (e) => time(e.at) },
    { label: 'Payload', cell: (e) => h('details', {}, h('summary', {}, summarize(e.payload)), pre(e.payload)) },
    { label: 'Hash', cell: (e) => h('code', { title: e.hash }, String(e.hash || '').slice(0, 12) + '…') },
  ], events, 'No events.', 'Trace ledger');
}

// summarize writes a payload's first few fields on one line.
function summarize(payload) {
  if (!payload || typeof payload !== 'object') return String(payload ?? '');
  const parts = Object.entries(payload).slice(0, 3).map(([k, v]) =>
    `${k}: ${typeof v === 'object' && v !== null ? '…' : String(v)}`);
  const text = parts.join(', ');
  return text.length > 80 ? text.slice(0, 79) + '…' : text || '{}';
}

// toolCalls lists the tools the model asked for in its answer and the tool
// calls traced into the run's ledger.
function toolCalls(run, events) {
  const asked = [];
  const r = run.response;
  if (r && Array.isArray(r.choices)) {
    for (const c of r.choices) {
      for (const tc of (c && c.message && c.message.tool_calls) || []) {
        asked.push({ name: tc.function ? tc.function.name : tc.type, args: tc.function ? tc.function.arguments : '', id: tc.id || '' });
      }
    }
  }
  const traced = events.filter((e) => e.type.startsWith('tool.'));
  return [
    asked.length ? h('h3', {}, 'Asked for by the model') : null,
    asked.length ? table([
      { label: 'Tool', cell: (t) => h('code', {}, t.name) },
      { label: 'Arguments', cell: (t) => pre(t.args) },
    ], asked) : null,
    traced.length ? h('h3', {}, 'Traced') : null,
    traced.length ? table([
      { label: '#', cell: (e) => String(e.seq), class: 'num' },
      { label: 'Event', cell: (e) => h('code', {}, e.type) },
      { label: 'Tool', cell: (e) => (e.payload && e.payload.name) || '–' },
      { label: 'Detail', cell: (e) => pre(e.payload) },
    ], traced) : null,
    asked.length || traced.length ? null : h('p', { class: 'empty' }, 'No tool calls.'),
  ];
}

function sideEffects(list) {
  return table([
    { label: 'Tool', cell: (s) => h('code', {}, s.toolName) },
    { label: 'Level', cell: (s) => String(s.level), class: 'num' },
    { label: 'State', cell: (s) => badge(s.state, s.state === 'blocked' ? 'bad' : s.state === 'planned' ? 'warn' : 'info') },
    { label: 'Why', cell: (s) => [s.reason || '', s.ruleId ? [' ', link('#/policies/' + encodeURIComponent(s.ruleId), 'rule ' + s.ruleId)] : null] },
    { label: 'Payload', cell: (s) => h('details', {}, h('summary', {}, summarize(s.payload)), pre(s.payload)) },
  ], list, 'No side effects.');
}

// feedbackSection lists the run's ratings and lets anyone who may read the
// run rate it and correct its answer (the API lets members give feedback).
function feedbackSection(ctx, run, events, saved) {
  const list = h('ul', { class: 'feedback-list', id: 'run-feedback' });
  const given = events.filter((e) => e.type === 'feedback').map((e) => e.payload || {});
  const draw = () => {
    clear(list, given.length ? given.map((f) => h('li', {},
      badge(f.rating > 0 ? 'Good' : 'Bad', f.rating > 0 ? 'ok' : 'bad'),
      f.correction ? [' Correction: ', h('q', {}, f.correction)] : ' No correction.')) : h('li', { class: 'empty' }, 'No feedback yet.'));
  };
  draw();
  const good = h('input', { type: 'radio', name: 'rating', value: '1', id: 'feedback-good', checked: true });
  const bad = h('input', { type: 'radio', name: 'rating', value: '-1', id: 'feedback-bad' });
  const correction = h('textarea', { name: 'correction', rows: 3, id: 'feedback-correction' });
  const f = form({ id: 'feedback-form', class: 'feedback-form' }, [
    h('fieldset', {},
      h('legend', {}, 'Was the answer right?'),
      h('label', { class: 'choice' }, good, ' Good answer'),
      h('label', { class: 'choice' }, bad, ' Bad answer')),
    field('Correction (optional)', correction, 'What the answer should have been. It teaches the learning loop.'),
    h('button', { type: 'submit', id: 'feedback-submit' }, 'Send feedback'),
  ], async () => {
    const rating = bad.checked ? -1 : 1;
    const body = { type: 'rating', rating };
    if (correction.value.trim()) body.correction = correction.value;
    const res = await act(ctx, 'POST', '/api/v1/runs/' + encodeURIComponent(run.id) + '/feedback', body, 'Thank you: your feedback is saved.');
    if (!res.ok || !ctx.current()) return;
    given.push(res.data.feedback);
    draw();
    correction.value = '';
    list.setAttribute('tabindex', '-1');
    list.focus();
    await saved();
  });
  return section('Feedback', list, f);
}

// bundleSection fetches the replay bundle on request and offers it as a
// file to save, through a Blob URL (no inline script, no navigation).
function bundleSection(ctx, run) {
  const place = h('div', { class: 'bundle', id: 'run-bundle' });
  let url = '';
  ctx.onLeave(() => url && URL.revokeObjectURL(url));
  const get = button('Prepare the replay bundle', async () => {
    const res = await api('GET', '/api/v1/runs/' + encodeURIComponent(run.id) + '/replay-bundle');
    if (!ctx.current()) return;
    if (!res.ok) {
      clear(place, problem(res.error, 'The replay bundle could not be made: '));
      return;
    }
    if (url) URL.revokeObjectURL(url);
    const blob = new Blob([JSON.stringify(res.data, null, 2) + '\n'], { type: 'application/json' });
    url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: `${run.id}.replay.json`, class: 'button', id: 'bundle-download' }, 'Download the replay bundle');
    clear(place, a, h('span', { class: 'hint' }, ` ${Math.max(1, Math.round(blob.size / 1024))} KB: the run, its request and answer, verdict and events, with the integrity as checked now.`));
    a.focus();
  }, { id: 'bundle-prepare', class: 'secondary' });
  return section('Replay bundle',
    h('p', {}, 'Everything needed to replay this run elsewhere, as one JSON file.'),
    h('div', { class: 'toolbar' }, get), place);
}
