// A pattern: the kind of request it is (its fingerprints), its scores, its
// artifacts and example runs; owners and admins synthesize an artifact now
// or ignore the pattern for good.
import { h, link, button, table, dl, section, pre, append } from '../lib/dom.js';
import { money, ms, num, pct, time } from '../lib/format.js';
import { page, load, api, adminOnly } from '../lib/ui.js';
import { stateBadge, refusal, confirmButton, words } from '../lib/governance.js';
import { patternName, evidence, synthesisLine } from './learning.js';

export async function render(ctx) {
  const id = ctx.params.id;
  page(ctx, 'Pattern ' + id);
  ctx.root.append(h('p', {}, link('#/learning', '← Learning')));
  const p = await load(ctx, '/api/v1/patterns/' + encodeURIComponent(id), 'The pattern');
  if (!p) return;
  const f = p.fingerprints || {};
  const result = h('div', { class: 'action-result' });
  append(ctx.root, [
    section('What it is',
      h('p', {}, stateBadge(p.state), ' ', p.stateReason || ''),
      dl([
        ['App and model', patternName(p)],
        ['Roles', (f.roles || []).join(' → ') || null],
        ['Tools', (f.tools || []).length ? f.tools.join(', ') : null],
        ['Answer format', f.responseFormat || null],
        ['System prompt', f.systemPreview || null],
      ]),
      h('p', { class: 'sub' }, 'Request skeleton (slots in braces)'), pre(f.skeleton || '')),
    section('Scores', dl([
      ['Runs', num(p.runCount)],
      ['Stability', pct(p.stabilityScore)],
      ['Optimizable', pct(p.optimizableScore)],
      ['Answer consistency', pct(p.consistency)],
      ['Corrections', num(p.corrections)],
      ['Average cost', money(p.avgCostUsd)],
      ['Average latency', ms(p.avgLatencyMs)],
      ['Last synthesis at', p.synthesizedAtRunCount ? `${num(p.synthesizedAtRunCount)} runs` : 'never tried'],
      ['Last run', time(p.lastRunAt)],
    ])),
    adminOnly(ctx, section('Actions', result, h('div', { class: 'toolbar' },
      button('Synthesize an artifact now', async () => {
        result.replaceChildren();
        const res = await api('POST', `/api/v1/patterns/${encodeURIComponent(id)}/synthesize`);
        if (!ctx.current()) return;
        if (!res.ok) {
          ctx.say(res.error.message, 'error');
          result.append(refusal(res.error, 'Synthesis was refused: '));
          return;
        }
        if (res.data.artifact) {
          ctx.say(`Learnt artifact ${res.data.artifact.id}; it starts in shadow.`, 'ok');
          ctx.navigate('#/artifacts/' + encodeURIComponent(res.data.artifact.id));
          return;
        }
        ctx.say('No artifact could be learnt from this pattern.', 'error');
        result.append(h('div', { class: 'status synthesis-refused', role: 'alert', dataset: { kind: 'error' } },
          h('p', {}, 'No artifact passed the replay gate:'), h('ul', {}, h('li', {}, synthesisLine(res.data.synthesisReport || {})))));
      }, { class: 'synthesize' }),
      p.state === 'negative' ? null : confirmButton('Ignore', 'Ignore this pattern for good? svc will never learn from it.', async () => {
        const res = await api('POST', `/api/v1/patterns/${encodeURIComponent(id)}/ignore`);
        if (!ctx.current()) return;
        if (!res.ok) {
          ctx.say(res.error.message, 'error');
          result.replaceChildren(refusal(res.error));
          return;
        }
        ctx.say('The pattern is ignored.', 'ok');
        await render(ctx);
      }, { danger: true })))),
    section('Artifacts', table([
      { label: 'Artifact', cell: (a) => link('#/artifacts/' + encodeURIComponent(a.id), a.id) },
      { label: 'State', cell: (a) => stateBadge(a.state) },
      { label: 'Type', cell: (a) => words(a.type) },
      { label: 'Confidence', class: 'num', cell: (a) => pct(a.confidence) },
      { label: 'Passed (of evaluated)', cell: (a) => evidence(a) },
    ], p.artifacts || [], 'None learnt yet.')),
    section('Example runs', table([
      { label: 'Run', cell: (r) => link('#/runs/' + encodeURIComponent(r.id), r.id) },
      { label: 'When', cell: (r) => time(r.createdAt) },
      { label: 'Route', cell: (r) => words(r.route || '') },
      { label: 'Status', cell: (r) => words(r.status || '') },
      { label: 'Cost', class: 'num', cell: (r) => money(r.costUsd) },
      { label: 'Latency', class: 'num', cell: (r) => ms(r.latencyMs) },
    ], p.exampleRuns || [], 'No example run is kept.'))]);
}
