// A rule: its condition, effect, target and message, how often it matched,
// and its recent verdicts with the runs and approvals they concern.
import { h, link, table, dl, section } from '../lib/dom.js';
import { num, time } from '../lib/format.js';
import { page, load, api, problem, qs } from '../lib/ui.js';
import { effectBadge, words } from '../lib/governance.js';

export async function render(ctx) {
  const id = ctx.params.id;
  page(ctx, 'Rule ' + id);
  ctx.root.append(h('p', {}, link('#/policies', '← All policies')));
  const data = await load(ctx, '/api/v1/policies', 'The policies');
  if (!data) return;
  const rule = (data.policies || []).find((r) => r.id === id);
  if (!rule) {
    ctx.root.append(h('p', { class: 'status', dataset: { kind: 'error' } },
      `No rule ${id} is in force: it may have been removed from the policy files. Its past verdicts follow.`));
  } else {
    ctx.root.append(section('The rule', dl([
      ['Target', words(rule.target)],
      ['Effect', effectBadge(rule.effect)],
      ['Description', rule.description || null],
      ['Message', rule.reason || null],
      ['File', h('code', {}, rule.source || '–')],
      ['Matched', rule.matches
        ? [`${num(rule.matches.lastHour)} in the last hour, ${num(rule.matches.lastDay)} in the last day; last `,
          rule.matches.lastAt ? time(rule.matches.lastAt) : 'never']
        : null],
    ]), h('p', { class: 'sub' }, 'Condition (CEL)'), h('pre', { class: 'code cel' }, rule.when)));
  }
  const res = await api('GET', `/api/v1/policies/${encodeURIComponent(id)}/verdicts` + qs({ limit: 100 }));
  if (!ctx.current()) return;
  const s = section('Recent verdicts');
  s.classList.add('verdicts');
  ctx.root.append(s);
  if (!res.ok) {
    s.append(problem(res.error, 'The verdicts could not be loaded: '));
    return;
  }
  s.append(table([
    { label: 'When', cell: (v) => time(v.at) },
    { label: 'Target', cell: (v) => words(v.target || '') },
    { label: 'Rule effect', cell: (v) => effectBadge(v.effect) },
    { label: 'Decision', cell: (v) => effectBadge(v.decision) },
    { label: 'Run', cell: (v) => (v.runId ? link('#/runs/' + encodeURIComponent(v.runId), v.runId)
      : v.sessionId ? ['web session ', h('code', {}, v.sessionId)] : '–') },
    { label: 'Approval', cell: (v) => (v.approvalId
      ? link('#/approvals' + qs({ status: 'all', id: v.approvalId }), v.approvalId) : '–') },
    { label: 'Reason', cell: (v) => v.reason || '–' },
  ], (res.data && res.data.verdicts) || [], 'No request has met this rule lately.'));
}
