// Policies: the rules in force by target, how often each matched lately,
// and the result of the last load or reload (a bad reload keeps the last
// good set: the error says why).
import { h, link, button, table, section } from '../lib/dom.js';
import { num, time, plural } from '../lib/format.js';
import { page, load, api, rerender, operates } from '../lib/ui.js';
import { effectBadge, refusal } from '../lib/governance.js';

// The targets, in the order a request meets them.
const TARGETS = [
  { id: 'chat', title: 'Chat requests', intro: 'Evaluated on each chat request before the provider.' },
  { id: 'provider', title: 'Candidate providers', intro: 'Evaluated on each provider a chat request may go to, before the call: a deny skips that provider.' },
  { id: 'tool', title: 'Tool calls', intro: 'Evaluated on each tool call a model returns or an agent traces.' },
  { id: 'web', title: 'Web actions', intro: 'Evaluated on each action of a web session.' },
];

export async function render(ctx) {
  page(ctx, 'Policies', 'The rules in force, read from the policy files. Deny wins over require approval, which wins over allow. ' +
    'Matches count the verdicts on record in the last day; a request that only allow rules matched changed nothing and is not recorded.');
  const data = await load(ctx, '/api/v1/policies', 'The policies');
  if (!data) return;
  const rules = data.policies || [];
  ctx.root.append(reloadPanel(ctx, data.reload));
  if (rules.length === 0) {
    ctx.root.append(h('p', { class: 'empty' }, 'No rule is loaded: every request is allowed. Rules are YAML files in the folder SVC_POLICY_DIR names.'));
    return;
  }
  const known = new Set(TARGETS.map((t) => t.id));
  const targets = [...TARGETS, ...[...new Set(rules.map((r) => r.target))].filter((t) => !known.has(t))
    .map((t) => ({ id: t, title: t, intro: '' }))];
  for (const t of targets) {
    const mine = rules.filter((r) => r.target === t.id);
    if (mine.length === 0) continue;
    const s = section(`${t.title} (${mine.length})`, t.intro ? h('p', { class: 'quiet' }, t.intro) : null, rulesTable(mine));
    s.dataset.target = t.id;
    ctx.root.append(s);
  }
}

// counted says whether a rule's matches are on record: a request that only
// allow rules matched changed nothing and is not in the audit trail, so an
// allow rule's zero means "not recorded", not "never matched".
function counted(r) {
  return r.matches && r.effect !== 'allow';
}

function rulesTable(rules) {
  const notRecorded = 'not recorded';
  return table([
    { label: 'Rule', cell: (r) => h('div', {}, link('#/policies/' + encodeURIComponent(r.id), r.id, { class: 'rule-link' }),
      r.description ? h('div', { class: 'quiet small' }, r.description) : null) },
    { label: 'Effect', cell: (r) => effectBadge(r.effect) },
    { label: 'Message', cell: (r) => r.reason || '–' },
    { label: 'Matched, last hour', class: 'num', cell: (r) => (counted(r) || r.matches?.lastHour ? num(r.matches.lastHour) : r.matches ? notRecorded : '–') },
    { label: 'Last day', class: 'num', cell: (r) => (counted(r) || r.matches?.lastDay ? num(r.matches.lastDay) : r.matches ? notRecorded : '–') },
    { label: 'Last match', cell: (r) => (!r.matches ? '–' : r.matches.lastAt ? time(r.matches.lastAt) : counted(r) ? 'never' : notRecorded) },
    { label: 'File', cell: (r) => h('code', {}, r.source || '–') },
  ], rules);
}

// reloadPanel says how the last load or reload went and offers a reload to
// those who may; other admins read who does.
function reloadPanel(ctx, reload) {
  const body = h('div', { class: 'reload-state' });
  const show = (r) => {
    if (!r) {
      body.replaceChildren(h('p', { class: 'quiet' }, 'This svc does not report when its rules were loaded.'));
      return;
    }
    body.replaceChildren(r.ok
      ? h('p', { class: 'reload-ok' }, 'Loaded ', plural(r.rules || 0, 'rule'), ' ', time(r.at), '.')
      : h('div', { class: 'status reload-failed', role: 'alert', dataset: { kind: 'error' } },
        h('p', {}, 'The last reload (', time(r.at), ') was refused; the last good set stays in force.'),
        h('p', { class: 'reload-error' }, r.error || 'The loader gave no reason.')));
  };
  show(reload);
  const result = h('div', { class: 'reload-result' });
  let action = null;
  if (operates(ctx.session)) {
    action = h('div', { class: 'toolbar' },
      button('Reload the policy files', async () => {
        result.replaceChildren();
        const res = await api('POST', '/api/v1/policies/reload', {});
        if (!ctx.current()) return;
        if (res.ok) {
          ctx.say(`Reloaded: ${plural((res.data.reload && res.data.reload.rules) || 0, 'rule')} in force.`, 'ok');
          await rerender(ctx, render);
          return;
        }
        ctx.say(res.error.message, 'error');
        result.append(refusal(res.error, 'The reload was refused: '));
        const again = await api('GET', '/api/v1/policies');
        if (ctx.current() && again.ok) show(again.data.reload);
      }, { class: 'reload' }));
  } else if (ctx.session.canAct) {
    action = h('p', { class: 'quiet reload-who' },
      'The policy files govern every organization: the admins of the operator’s default organization reload them.');
  }
  return section('Policy files', body, result, action);
}
