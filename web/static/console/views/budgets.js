// Budgets: the organization's limits on spend per scope and window, each
// with what its counter holds now and when its window resets, and the spend
// counters of a chosen scope and window. Owners and admins add, replace and
// delete budgets; the API checks each one and its refusal is shown under
// the field it names.
import { h, append, clear, field, form, table, section, badge } from '../lib/dom.js';
import { money, num, pct, time } from '../lib/format.js';
import { page, load, api, adminOnly, qs, rerender } from '../lib/ui.js';
import { fieldProblem, clearProblems } from '../lib/forms.js';
import { confirmButton } from '../lib/governance.js';

// The scopes and windows, as the API names them, in its order.
const SCOPES = {
  tenant: 'the whole organization',
  app: 'an app (X-Svc-App, or the key’s app)',
  key: 'an API key',
  agent: 'an agent (X-Svc-Agent)',
  subject: 'a subject (X-Svc-Subject)',
};
const WINDOWS = { hour: 'hour', day: 'day', month: 'calendar month' };

// The limits a budget may set, with how each is written.
const LIMITS = [
  { key: 'limitUsd', spent: 'usd', label: 'Cost', format: money },
  { key: 'limitTokens', spent: 'tokens', label: 'Tokens', format: num },
  { key: 'limitRequests', spent: 'requests', label: 'Requests', format: num },
];

export async function render(ctx) {
  page(ctx, 'Budgets', 'Limits on what each app, key, agent or subject, or the whole organization, spends per hour, day or calendar month. ',
    'A hard budget refuses calls once reached (429 ', h('code', {}, 'budget_exceeded'), ', in every mode); a soft one only sends the ',
    h('code', {}, 'budget.threshold'), ' webhook at 80% and 100%.');
  const data = await load(ctx, '/api/v1/budgets', 'The budgets');
  if (!data) return;
  const budgets = data.budgets || [];
  append(ctx.root, [
    section('Budgets', budgetTable(ctx, budgets)),
    adminOnly(ctx, section('Add or replace a budget', budgetForm(ctx))),
  ]);
  const spend = h('div', { id: 'spend-report', 'aria-live': 'polite' });
  ctx.root.append(section('Spend', spendForm(ctx, spend), spend));
  await drawSpend(ctx, spend, ctx.query.get('scope') || 'tenant', ctx.query.get('window') || 'day');
}

function budgetTable(ctx, budgets) {
  const t = table([
    { label: 'Budget', cell: (b) => h('div', {}, h('strong', {}, b.id), b.description ? h('div', { class: 'quiet small' }, b.description) : null) },
    // The action comes second so that a phone reaches it without scrolling
    // to the table's end.
    ...(ctx.session.canAct ? [{ label: 'Action', cell: (b) => confirmButton('Delete', `Delete the budget “${b.id}”?`, async () => {
      const res = await api('DELETE', `/api/v1/budgets/${encodeURIComponent(b.id)}`);
      if (!ctx.current()) return;
      if (!res.ok) {
        ctx.say(res.error.message, 'error');
        return;
      }
      ctx.say(`Budget “${b.id}” deleted.`, 'ok');
      await rerender(ctx, render);
    }, { danger: true }) }] : []),
    { label: 'Kind', cell: (b) => badge(b.kind, b.kind === 'hard' ? 'bad' : 'info') },
    { label: 'Scope', cell: (b) => scopeOf(b) },
    { label: 'Window', cell: (b) => WINDOWS[b.window] || b.window },
    { label: 'Spent of limit', cell: (b) => usage(b) },
    { label: 'Resets', cell: (b) => (b.resetsAt ? time(b.resetsAt) : '–') },
  ], budgets, 'No budgets yet: spend is counted, and nothing limits it.', 'Budgets');
  const rows = t.querySelectorAll('tbody tr');
  budgets.forEach((b, i) => rows[i].setAttribute('data-budget', b.id));
  return h('div', { id: 'budget-list' }, t);
}

// scopeOf says whose spend a budget limits: one value, or each value alone.
function scopeOf(b) {
  if (b.scope === 'tenant') return 'the organization';
  if (b.match) return h('span', {}, b.scope, ' ', h('code', {}, b.match));
  return `each ${b.scope} alone`;
}

// usage is each limit the budget sets, with a meter of what its counter
// holds where it names one counter.
function usage(b) {
  return h('div', { class: 'budget-usage' }, LIMITS.filter((l) => b[l.key] !== undefined && b[l.key] !== null).map((l) => {
    const limit = b[l.key];
    if (!b.spent) return h('div', {}, `${l.label}: ${l.format(limit)}`, h('span', { class: 'quiet small' }, ' each'));
    const spent = b.spent[l.spent] || 0;
    const ratio = limit > 0 ? spent / limit : 1;
    return h('div', { dataset: { limit: l.key } },
      h('meter', { min: 0, max: limit, value: Math.min(spent, limit), low: 0.8 * limit, high: 0.999 * limit, optimum: 0,
        'aria-label': `${l.label} spent of the limit` }),
      ' ', `${l.label}: ${l.format(spent)} of ${l.format(limit)} (${pct(ratio)})`);
  }));
}

function budgetForm(ctx) {
  const f = form({ id: 'budget-form', class: 'stack' }, [
    field('Id', h('input', { name: 'id', id: 'budget-id', maxlength: 64, autocomplete: 'off' }),
      'Optional: a budget of the same id is replaced. Without one, svc names it from the scope, match and window.'),
    field('Scope', h('select', { name: 'scope', id: 'budget-scope' },
      Object.entries(SCOPES).map(([v, about]) => h('option', { value: v, selected: v === 'app' }, `${v}: ${about}`)))),
    field('Match', h('input', { name: 'match', id: 'budget-match', maxlength: 256, autocomplete: 'off' }),
      'The one app, key id, agent or subject limited. Empty: each of them has the limit alone. None for the organization.'),
    field('Window', h('select', { name: 'window', id: 'budget-window' },
      Object.entries(WINDOWS).map(([v, label]) => h('option', { value: v, selected: v === 'day' }, label)))),
    field('Kind', h('select', { name: 'kind', id: 'budget-kind' },
      h('option', { value: 'hard', selected: true }, 'hard: refuse calls at the limit'),
      h('option', { value: 'soft' }, 'soft: alert at 80% and 100%'))),
    field('Cost limit (USD)', h('input', { name: 'limitUsd', id: 'budget-limitUsd', inputmode: 'decimal', autocomplete: 'off' })),
    field('Token limit', h('input', { name: 'limitTokens', id: 'budget-limitTokens', inputmode: 'numeric', autocomplete: 'off' })),
    field('Request limit', h('input', { name: 'limitRequests', id: 'budget-limitRequests', inputmode: 'numeric', autocomplete: 'off' }),
      'Set one limit or more: the budget is reached when any is.'),
    field('Description', h('input', { name: 'description', id: 'budget-description', maxlength: 500, autocomplete: 'off' })),
    h('button', { type: 'submit', id: 'budget-save' }, 'Save budget'),
  ], async (values, el) => {
    clearProblems(el);
    const res = await api('PUT', '/api/v1/budgets', budgetOf(values));
    if (!ctx.current()) return;
    if (!res.ok) {
      if (!fieldProblem(el, res.error)) ctx.say(res.error.message, 'error');
      else ctx.say('');
      return;
    }
    ctx.say('Budget saved.', 'ok');
    await rerender(ctx, render);
  });
  return f;
}

// budgetOf is the form's values as the API reads a budget: empty fields
// left out, limits as numbers (a value that is not one is sent as typed,
// for the API to name).
function budgetOf(values) {
  const b = { scope: values.scope, window: values.window, kind: values.kind };
  for (const k of ['id', 'match', 'description']) if (values[k].trim() !== '') b[k] = values[k].trim();
  for (const { key } of LIMITS) {
    const v = values[key].trim();
    if (v === '') continue;
    b[key] = Number.isFinite(Number(v)) ? Number(v) : v;
  }
  return b;
}

function spendForm(ctx, box) {
  const scope = ctx.query.get('scope') || 'tenant';
  const window = ctx.query.get('window') || 'day';
  return form({ id: 'spend-form', class: 'filters', 'aria-label': 'Choose the counters' }, [
    field('Scope', h('select', { name: 'scope', id: 'spend-scope' },
      Object.keys(SCOPES).map((v) => h('option', { value: v, selected: v === scope }, v)))),
    field('Window', h('select', { name: 'window', id: 'spend-window' },
      Object.entries(WINDOWS).map(([v, label]) => h('option', { value: v, selected: v === window }, label)))),
    h('button', { type: 'submit', id: 'spend-show', class: 'secondary' }, 'Show'),
  ], (values) => drawSpend(ctx, box, values.scope, values.window));
}

// drawSpend shows the counters of scope over the current window, highest
// cost first.
async function drawSpend(ctx, box, scope, window) {
  const res = await api('GET', '/api/v1/spend' + qs({ scope, window }));
  if (!ctx.current()) return;
  if (!res.ok) {
    clear(box, h('p', { class: 'status', role: 'alert', dataset: { kind: 'error' } }, 'The spend could not be loaded: ' + res.error.message));
    return;
  }
  const r = res.data;
  clear(box,
    h('p', { class: 'quiet', id: 'spend-window-line' }, `This ${WINDOWS[r.window] || r.window} (${r.timezone}) began `, time(r.windowStart),
      '; it resets ', time(r.resetsAt), '. Cache and artifact hits cost nothing and are counted apart.'),
    table([
      { label: r.scope === 'tenant' ? 'Organization' : r.scope, cell: (it) => (r.scope === 'tenant' ? 'all calls' : h('code', {}, it.key)) },
      { label: 'Cost', class: 'num', cell: (it) => money(it.usd) },
      { label: 'Tokens', class: 'num', cell: (it) => num(it.tokens) },
      { label: 'Requests', class: 'num', cell: (it) => num(it.requests) },
      { label: 'Hits', class: 'num', cell: (it) => num(it.hits) },
    ], r.items || [], `Nothing spent by any ${r.scope} this ${WINDOWS[r.window] || r.window}.`, 'Spend'));
}
