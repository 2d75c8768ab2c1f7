// Learning: the kinds of request applications keep making (patterns) by
// lifecycle state, the declarative answers learnt from them (artifacts)
// with their evidence, and the last learning pass. Owners and admins run a
// pass from here.
import { h, link, button, table, section, dl } from '../lib/dom.js';
import { money, ms, num, pct, time, plural } from '../lib/format.js';
import { page, load, api, adminOnly } from '../lib/ui.js';
import { stateBadge, refusal, words } from '../lib/governance.js';

const PATTERN_STATES = ['candidate', 'shadow', 'promoted', 'observed', 'retired', 'negative'];
const PATTERN_INTRO = {
  observed: 'Seen, not yet often or steadily enough to learn from.',
  candidate: 'Steady enough: the next pass tries to learn an artifact.',
  shadow: 'An artifact answers beside the live call and is scored.',
  promoted: 'An artifact serves these requests.',
  retired: 'Its artifacts were rolled back or quarantined.',
  negative: 'Ignored by an operator: never learnt from.',
};
const ARTIFACT_STATES = ['promoted', 'shadow', 'quarantined', 'retired'];

export async function render(ctx) {
  page(ctx, 'Learning', 'Requests that repeat become patterns; a steady pattern yields an artifact, a declarative answer that serves only once its evidence passes the gates.');
  const [patterns, artifacts, report] = await Promise.all([
    api('GET', '/api/v1/patterns'), api('GET', '/api/v1/artifacts'), api('GET', '/api/v1/learning/report')]);
  if (!ctx.current()) return;
  const passResult = h('div', { class: 'pass-result' });
  ctx.root.append(section('Learning passes',
    report.ok ? reportSummary(report.data.last || null) : refusal(report.error, 'The learning report could not be loaded: '),
    passResult,
    adminOnly(ctx, h('div', { class: 'toolbar' }, button('Run a learning pass now', async () => {
      passResult.replaceChildren();
      const res = await api('POST', '/api/v1/learning/tick');
      if (!ctx.current()) return;
      if (!res.ok) {
        ctx.say(res.error.message, 'error');
        passResult.append(refusal(res.error, 'The pass failed: '));
        return;
      }
      ctx.say(`Learning pass done: ${plural(res.data.artifactsSynthesized, 'artifact')} synthesized.`, 'ok');
      await render(ctx);
    }, { class: 'run-pass' })))));

  const pSec = section('Patterns');
  pSec.classList.add('patterns');
  ctx.root.append(pSec);
  if (!patterns.ok) pSec.append(refusal(patterns.error, 'The patterns could not be loaded: '));
  else if ((patterns.data.patterns || []).length === 0) pSec.append(h('p', { class: 'empty' }, 'No pattern yet: a learning pass groups the recorded runs into patterns.'));
  else {
    const list = patterns.data.patterns;
    for (const st of [...PATTERN_STATES, ...new Set(list.map((p) => p.state).filter((s) => !PATTERN_STATES.includes(s)))]) {
      const mine = list.filter((p) => p.state === st);
      if (mine.length === 0) continue;
      pSec.append(h('div', { class: 'by-state', dataset: { state: st } },
        h('h3', {}, stateBadge(st), ' ', plural(mine.length, 'pattern')),
        PATTERN_INTRO[st] ? h('p', { class: 'quiet' }, PATTERN_INTRO[st]) : null,
        patternTable(mine)));
    }
  }

  const aSec = section('Artifacts');
  aSec.classList.add('artifacts');
  ctx.root.append(aSec);
  if (!artifacts.ok) aSec.append(refusal(artifacts.error, 'The artifacts could not be loaded: '));
  else if ((artifacts.data.artifacts || []).length === 0) aSec.append(h('p', { class: 'empty' }, 'No artifact yet.'));
  else {
    const list = artifacts.data.artifacts;
    for (const st of [...ARTIFACT_STATES, ...new Set(list.map((a) => a.state).filter((s) => !ARTIFACT_STATES.includes(s)))]) {
      const mine = list.filter((a) => a.state === st);
      if (mine.length === 0) continue;
      aSec.append(h('div', { class: 'by-state', dataset: { state: st } },
        h('h3', {}, stateBadge(st), ' ', plural(mine.length, 'artifact')), artifactTable(mine)));
    }
  }
}

// patternName is how a pattern is called in a list: its app and model, and
// the start of its system prompt.
export function patternName(p) {
  const f = p.fingerprints || {};
  return [f.app || 'no app', f.model].filter(Boolean).join(' · ');
}

function patternTable(list) {
  return table([
    { label: 'Pattern', cell: (p) => h('div', {}, link('#/patterns/' + encodeURIComponent(p.id), patternName(p), { class: 'pattern-link' }),
      p.fingerprints && p.fingerprints.systemPreview ? h('div', { class: 'quiet small preview' }, p.fingerprints.systemPreview) : null) },
    { label: 'Runs', class: 'num', cell: (p) => num(p.runCount) },
    { label: 'Stability', class: 'num', cell: (p) => pct(p.stabilityScore) },
    { label: 'Optimizable', class: 'num', cell: (p) => pct(p.optimizableScore) },
    { label: 'Avg cost', class: 'num', cell: (p) => money(p.avgCostUsd) },
    { label: 'Avg latency', class: 'num', cell: (p) => ms(p.avgLatencyMs) },
    { label: 'Last run', cell: (p) => time(p.lastRunAt) },
  ], list);
}

// evidence writes an artifact's counters: passed and failed by kind.
export function evidence(a) {
  return h('span', { class: 'evidence' },
    h('span', {}, `replay ${a.replayPass}/${a.replayPass + a.replayFail}`),
    h('span', {}, `shadow ${a.shadowPass}/${a.shadowPass + a.shadowFail}`),
    h('span', {}, `live ${a.livePass}/${a.livePass + a.liveFail}`));
}

function artifactTable(list) {
  return table([
    { label: 'Artifact', cell: (a) => link('#/artifacts/' + encodeURIComponent(a.id), a.id, { class: 'artifact-link' }) },
    { label: 'Type', cell: (a) => words(a.type) },
    { label: 'Pattern', cell: (a) => link('#/patterns/' + encodeURIComponent(a.patternId), a.patternId) },
    { label: 'Confidence', class: 'num', cell: (a) => pct(a.confidence) },
    { label: 'Lower bound', class: 'num', cell: (a) => pct(a.lowerBound) },
    { label: 'Passed (of evaluated)', cell: (a) => evidence(a) },
    { label: 'Updated', cell: (a) => time(a.updatedAt) },
  ], list);
}

// reportSummary lays out one learning pass's report.
export function reportSummary(r) {
  if (!r) return h('p', { class: 'empty report' }, 'No learning pass has run yet.');
  const ids = (list) => (list && list.length
    ? list.map((id, i) => [i ? ', ' : '', link('#/artifacts/' + encodeURIComponent(id), id)]) : null);
  return h('div', { class: 'report' },
    h('p', {}, 'Last pass ', time(r.createdAt), ` (${words(r.trigger)}, ${ms(r.durationMs)}): scanned ${plural(r.runsScanned, 'run')}, `,
      `${plural(r.patterns, 'pattern')}, synthesized ${plural(r.artifactsSynthesized, 'artifact')}.`),
    dl([
      ['Ready to promote', ids(r.promotionsEligible)],
      ['Promoted automatically', ids(r.autoPromoted)],
      ['Quarantined', ids(r.quarantined)],
      ['Retired', ids(r.retired)],
    ]),
    (r.transitions || []).length ? h('div', {}, h('p', { class: 'sub' }, 'Patterns that moved'),
      h('ul', { class: 'transitions' }, r.transitions.map((t) => h('li', {},
        link('#/patterns/' + encodeURIComponent(t.patternId), t.patternId), `: ${t.from ? words(t.from) : 'new'} → ${words(t.to)}`,
        t.reason ? ` (${t.reason})` : '')))) : null,
    (r.synthesisReports || []).length ? h('div', {}, h('p', { class: 'sub' }, 'Synthesis attempts'),
      h('ul', { class: 'synthesis' }, r.synthesisReports.map((s) => h('li', {}, synthesisLine(s))))) : null);
}

// synthesisLine says what came of trying to learn from a pattern: the
// artifact, or why not, type by type.
export function synthesisLine(s) {
  return [
    link('#/patterns/' + encodeURIComponent(s.patternId), s.patternId), ': ',
    s.artifactId ? ['learnt ', link('#/artifacts/' + encodeURIComponent(s.artifactId), s.artifactId), ` (${words(s.type || '')})`] : 'no artifact',
    s.reason ? ` — ${s.reason}` : '',
    (s.attempts || []).length ? h('ul', { class: 'attempts' }, s.attempts.map((a) => h('li', {},
      h('strong', {}, words(a.type)), a.passed ? ' passed' : ' refused', a.reason ? `: ${a.reason}` : ''))) : null,
  ];
}
