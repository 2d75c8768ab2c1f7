// Audit: the organization's trail of decisions (who did what, and whether
// svc allowed, denied or held it), newest first, filtered by decision,
// action, actor and time. The filters live in the address (#/audit?…), so a
// filtered view can be reloaded and shared; older events load page by page.
import { h, clear, field, form, table, badge, button } from '../lib/dom.js';
import { time } from '../lib/format.js';
import { page, api, qs } from '../lib/ui.js';
import { fieldProblem } from '../lib/forms.js';

const PAGE = 50;
// MAX is the most events the API gives in one answer.
const MAX = 1000;
const DECISIONS = ['allow', 'deny', 'require_approval'];

export async function render(ctx) {
  page(ctx, 'Audit', 'Every management action and gateway decision, newest first.');
  const q = ctx.query;
  const filters = {
    decision: q.get('decision') || '',
    action: q.get('action') || '',
    actor: q.get('actor') || '',
    since: q.get('since') || '',
    until: q.get('until') || '',
  };
  const filterBox = filterForm(ctx, filters);
  ctx.root.append(filterBox);
  const names = await actorNames(ctx);
  if (!ctx.current()) return;
  const box = h('div', { id: 'audit-events' });
  const more = h('div', { class: 'toolbar' });
  ctx.root.append(box, more);
  const events = [];
  const seen = new Set();
  // next loads the page of events older than the oldest shown.
  const next = async () => {
    const params = { ...filters, limit: PAGE };
    // until is exclusive: ask up to just after the oldest event shown, so
    // that others of the same millisecond come too (the shown ones are
    // dropped by id). The page is made larger by the shown events of that
    // millisecond, so that a burst of more than a page in one millisecond
    // still moves on.
    if (events.length) {
      const oldest = Date.parse(events[events.length - 1].at);
      const tied = events.filter((e) => Date.parse(e.at) === oldest).length;
      params.until = new Date(oldest + 1).toISOString();
      params.limit = Math.min(PAGE + tied, MAX);
    }
    const res = await api('GET', '/api/v1/audit' + qs(params));
    if (!ctx.current()) return;
    if (!res.ok) {
      fieldProblem(filterBox, res.error);
      clear(more, h('p', { class: 'status', role: 'alert', dataset: { kind: 'error' } }, 'The audit trail could not be loaded: ' + res.error.message));
      return;
    }
    const got = (res.data && res.data.events) || [];
    let added = 0;
    for (const e of got) {
      if (seen.has(e.id)) continue;
      seen.add(e.id);
      events.push(e);
      added++;
    }
    draw(box, events, filters, names);
    const full = got.length >= params.limit;
    let end = null;
    if (full && added === 0) {
      end = h('p', { class: 'quiet', id: 'audit-stuck' }, `More than ${MAX - PAGE} events share one millisecond here, so older ones cannot be paged to; narrow the filters (an action, an actor or an earlier Until) to see them.`);
    } else if (!full && events.length) {
      end = h('p', { class: 'quiet' }, 'That is the whole trail for these filters.');
    }
    clear(more, full && added > 0
      ? button('Older events', async () => {
        const before = events.length;
        await next();
        // The first new row takes focus, so a keyboard reader goes on from there.
        const row = box.querySelectorAll('tbody tr')[before];
        if (row) {
          row.setAttribute('tabindex', '-1');
          row.focus();
        }
      }, { class: 'secondary', id: 'audit-more' })
      : end);
  };
  await next();
}

function filterForm(ctx, f) {
  return form({ id: 'audit-filters', class: 'filters', 'aria-label': 'Filter the audit trail' }, [
    field('Decision', h('select', { name: 'decision', id: 'audit-decision' },
      h('option', { value: '' }, 'any'),
      DECISIONS.map((d) => h('option', { value: d, selected: f.decision === d }, d.replace('_', ' '))))),
    field('Action', h('input', { name: 'action', id: 'audit-action', value: f.action, placeholder: 'key.create', autocomplete: 'off' })),
    field('Actor', h('input', { name: 'actor', id: 'audit-actor', value: f.actor, placeholder: 'user:… or key:…', autocomplete: 'off' })),
    field('Since', h('input', { type: 'datetime-local', name: 'since', id: 'audit-since', value: local(f.since) })),
    field('Until', h('input', { type: 'datetime-local', name: 'until', id: 'audit-until', value: local(f.until) })),
    h('div', { class: 'toolbar' },
      h('button', { type: 'submit', id: 'audit-apply' }, 'Filter'),
      h('a', { href: '#/audit', class: 'button-link' }, 'Clear')),
  ], (values) => {
    ctx.navigate('#/audit' + qs({
      decision: values.decision, action: values.action.trim(), actor: values.actor.trim(),
      since: rfc3339(values.since), until: rfc3339(values.until),
    }));
  });
}

// local turns an RFC 3339 time into a datetime-local input's value, in the
// person's zone; rfc3339 turns it back.
function local(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const d = new Date(t - new Date(t).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 16);
}

function rfc3339(value) {
  if (!value) return '';
  const t = new Date(value);
  return Number.isNaN(t.getTime()) ? '' : t.toISOString();
}

// actorNames maps actors ("user:…", "key:…") to what people call them: the
// active organization's members by name, and its keys by name for those
// who may see them. An actor not found is shown as it is.
async function actorNames(ctx) {
  const names = new Map();
  const [org, keys] = await Promise.all([
    ctx.session.mode === 'account' ? api('GET', '/api/v1/orgs/active') : null,
    ctx.session.canAct ? api('GET', '/api/v1/keys') : null,
  ]);
  if (org && org.ok) for (const m of org.data.members || []) names.set('user:' + m.userId, m.name ? `${m.name} (${m.email})` : m.email);
  if (keys && keys.ok) for (const k of keys.data.keys || []) names.set('key:' + k.id, `key “${k.name}”`);
  return names;
}

// actor links to the trail filtered by an event's actor.
function actor(raw, names) {
  if (!raw) return '';
  return h('a', { href: '#/audit' + qs({ actor: raw }), title: raw, class: 'actor' }, names.get(raw) || raw);
}

function draw(box, events, filters, names) {
  const any = Object.values(filters).some(Boolean);
  clear(box, table([
    { label: 'When', cell: (e) => time(e.at) },
    { label: 'Action', cell: (e) => h('code', {}, e.action) },
    { label: 'Decision', cell: (e) => badge(e.decision.replace('_', ' '), e.decision === 'allow' ? 'ok' : e.decision === 'deny' ? 'bad' : 'warn') },
    { label: 'Actor', cell: (e) => actor(e.actor, names) },
    { label: 'Target', cell: (e) => target(e.target) },
    { label: 'Details', cell: (e) => details(e.details) },
  ], events, any ? 'No events match these filters.' : 'No events yet.'));
  const trs = box.querySelectorAll('tbody tr');
  events.forEach((e, i) => {
    trs[i].setAttribute('data-action', e.action);
    trs[i].setAttribute('data-event', e.id);
  });
}

// target links the record an event names when the console has a page for it.
function target(t) {
  if (!t) return '';
  const pages = [[/^run_/, '#/runs/'], [/^art_/, '#/artifacts/'], [/^pat_/, '#/patterns/']];
  for (const [re, route] of pages) if (re.test(t)) return h('a', { href: route + encodeURIComponent(t) }, t);
  return t;
}

function details(d) {
  const keys = d ? Object.keys(d) : [];
  if (keys.length === 0) return '';
  return h('dl', { class: 'details' }, keys.sort().map((k) => [h('dt', {}, k), h('dd', {}, typeof d[k] === 'string' ? d[k] : JSON.stringify(d[k]))]));
}
