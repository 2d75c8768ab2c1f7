// Runs: every gateway call, newest first, filtered and searched from the
// fragment's query (so a filtered list is a link: #/runs?route=exact_cache),
// and kept up to date from the runs stream while the first page is shown.
import { h, clear, field, form, link, badge } from '../lib/dom.js';
import { money, ms, num, time } from '../lib/format.js';
import { listen } from '../lib/live.js';
import { page, problem, api, qs } from '../lib/ui.js';
import { ROUTES } from './overview.js';

// PAGE is how many runs one page shows.
const PAGE = 25;

// FILTERS are the list's query parameters the form edits; the stream takes
// the first five.
const STREAMED = ['route', 'status', 'app', 'agent', 'model'];
const FILTERS = [...STREAMED, 'since', 'until', 'q'];

const STATUSES = [
  { status: 'ok', label: 'OK' },
  { status: 'error', label: 'Error' },
  { status: 'blocked', label: 'Blocked' },
];

// routeLabel names a route as people read it.
export function routeLabel(route) {
  const r = ROUTES.find((x) => x.route === route);
  return r ? r.label : route;
}

// routeBadge and statusBadge are a run's route and status, coloured.
export function routeBadge(route) {
  return badge(routeLabel(route), route === 'blocked' ? 'bad' : route === 'live' ? 'info' : 'ok');
}

export function statusBadge(status) {
  return badge(status, status === 'ok' ? 'ok' : status === 'blocked' ? 'warn' : 'bad');
}

export async function render(ctx) {
  page(ctx, 'Runs', 'Every call through the gateway, newest first.');
  const filters = {};
  for (const k of FILTERS) filters[k] = ctx.query.get(k) || '';
  const offset = Math.max(0, parseInt(ctx.query.get('offset') || '0', 10) || 0);

  ctx.root.append(filterForm(ctx, filters));
  const indicator = h('p', { class: 'live', id: 'live-state', role: 'status' });
  const summary = h('p', { class: 'list-summary', id: 'runs-summary' });
  const body = h('tbody', { id: 'runs-body' });
  const list = h('div', { class: 'runs-list' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of runs' });
  ctx.root.append(h('div', { class: 'toolbar' }, indicator, summary), list, pager);

  let total = 0;
  let shown = new Set();

  // load reads the page of runs from the API and draws it; ids not shown
  // before (after the first load) are marked new.
  async function load(markNew) {
    const res = await api('GET', '/api/v1/runs' + qs({ ...filters, limit: PAGE, offset }));
    if (!ctx.current()) return;
    if (!res.ok) {
      clear(list, problem(res.error, 'The runs could not be loaded: '));
      clear(pager);
      summary.textContent = '';
      return;
    }
    const runs = res.data.runs || [];
    total = res.data.total || 0;
    const before = shown;
    shown = new Set(runs.map((r) => r.id));
    clear(body, runs.map((r) => row(r, markNew && !before.has(r.id))));
    clear(list, runs.length ? runsTable(body) : empty(filters, offset));
    drawSummary(runs.length);
    drawPager();
  }

  function drawSummary(count) {
    summary.textContent = count === 0 ? '' : `Showing ${num(offset + 1)}–${num(offset + count)} of ${num(total)}`;
  }

  function drawPager() {
    const here = { ...filters };
    const prev = offset > 0 ? link('#/runs' + qs({ ...here, offset: Math.max(0, offset - PAGE) || '' }), '← Newer', { rel: 'prev', id: 'runs-prev' }) : null;
    const next = offset + PAGE < total ? link('#/runs' + qs({ ...here, offset: offset + PAGE }), 'Older →', { rel: 'next', id: 'runs-next' }) : null;
    clear(pager, prev, next);
  }

  // arrive puts a run from the stream at the top of the first page.
  function arrive(run) {
    if (!run || !run.id || shown.has(run.id)) return;
    if (filters.until && Date.parse(run.createdAt) > Date.parse(filters.until)) return;
    if (filters.q) {
      // The search reaches the request's text, which the stream does not
      // carry: ask the API again.
      reloadSoon();
      return;
    }
    shown.add(run.id);
    total++;
    if (!body.isConnected) clear(list, runsTable(body));
    body.prepend(row(run, true));
    while (body.rows.length > PAGE) {
      shown.delete(body.rows[body.rows.length - 1].dataset.run);
      body.deleteRow(-1);
    }
    drawSummary(body.rows.length);
    drawPager();
  }

  let pending = null;
  function reloadSoon() {
    if (pending) return;
    pending = setTimeout(() => {
      pending = null;
      if (ctx.current()) load(true);
    }, 300);
  }
  ctx.onLeave(() => clearTimeout(pending));

  await load(false);
  if (!ctx.current()) return;

  if (offset > 0) {
    indicator.dataset.state = 'paused';
    indicator.textContent = 'Live updates are paused on older pages. ';
    indicator.append(link('#/runs' + qs(filters), 'Go to the newest runs'));
    return;
  }
  const streamed = {};
  for (const k of STREAMED) streamed[k] = filters[k];
  let wasDown = false;
  indicator.dataset.state = 'connecting';
  indicator.textContent = 'Connecting…';
  const close = listen('/api/v1/runs/stream' + qs(streamed), 'run', arrive, (state) => {
    if (!ctx.current()) return;
    indicator.dataset.state = state;
    if (state === 'live') {
      indicator.textContent = 'Live';
      // Runs recorded while the stream was down are read from the list.
      if (wasDown) load(true);
      wasDown = false;
    } else if (state === 'reconnecting') {
      indicator.textContent = 'Reconnecting…';
      wasDown = true;
    } else {
      indicator.textContent = 'Live updates are off. Reload the page to try again.';
      wasDown = true;
    }
  });
  ctx.onLeave(close);
}

// filterForm edits the filters; submitting it changes the fragment, which
// shows the list again with the new query.
function filterForm(ctx, f) {
  const select = (name, options, value) => h('select', { name },
    h('option', { value: '' }, 'Any'),
    options.map(([v, label]) => h('option', { value: v, selected: v === value }, label)));
  const text = (name, value, placeholder) => h('input', { name, type: 'text', value, placeholder, autocomplete: 'off' });
  const search = h('input', { name: 'q', type: 'search', value: f.q, placeholder: 'id, model, app, agent or text', id: 'runs-q' });
  return form({ class: 'filters runs-filters', id: 'runs-filters', role: 'search', 'aria-label': 'Filter the runs' }, [
    h('div', { class: 'search-row' },
      field('Search', search),
      h('button', { type: 'submit', id: 'runs-apply' }, 'Search')),
    h('div', { class: 'filter-row' },
      field('Route', select('route', ROUTES.map((r) => [r.route, r.label]), f.route)),
      field('Status', select('status', STATUSES.map((s) => [s.status, s.label]), f.status)),
      field('App', text('app', f.app)),
      field('Agent', text('agent', f.agent)),
      field('Model', text('model', f.model)),
      field('From', h('input', { name: 'since', type: 'datetime-local', value: localInput(f.since) })),
      field('Until', h('input', { name: 'until', type: 'datetime-local', value: localInput(f.until) }))),
    h('div', { class: 'toolbar' },
      h('button', { type: 'submit', class: 'secondary' }, 'Apply filters'),
      link('#/runs', 'Clear filters', { id: 'runs-clear' })),
  ], (values) => {
    values.since = rfc3339(values.since);
    values.until = rfc3339(values.until);
    const next = '#/runs' + qs(values);
    if (window.location.hash === next) ctx.navigate(next + (next.includes('?') ? '&' : '?'));
    else ctx.navigate(next);
  });
}

// localInput turns an RFC 3339 time into a datetime-local input's value in
// the person's zone; rfc3339 turns it back.
function localInput(iso) {
  const t = Date.parse(iso);
  if (!iso || Number.isNaN(t)) return '';
  const d = new Date(t);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function rfc3339(local) {
  const t = Date.parse(local);
  return local && !Number.isNaN(t) ? new Date(t).toISOString() : '';
}

function runsTable(body) {
  const cols = [['Time'], ['Model'], ['Route'], ['Status'], ['App'], ['Agent'], ['Latency', 'num'], ['Cost', 'num'], ['Saved', 'num']];
  return h('div', { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': 'Runs' },
    h('table', { class: 'runs', id: 'runs-table' },
      h('thead', {}, h('tr', {}, cols.map(([label, cls]) => h('th', { scope: 'col', class: cls }, label)))),
      body));
}

// row is one run; its time links to the run's page.
function row(r, isNew) {
  const saved = r.savedUsd ? money(r.savedUsd) : r.ghostSavedUsd ? money(r.ghostSavedUsd) + ' (ghost)' : '–';
  return h('tr', { class: isNew ? 'new' : null, dataset: { run: r.id, route: r.route } },
    h('td', {}, link('#/runs/' + encodeURIComponent(r.id), time(r.createdAt)),
      isNew ? [' ', badge('new', 'info')] : null),
    h('td', {}, r.model || '–'),
    h('td', {}, routeBadge(r.route)),
    h('td', {}, statusBadge(r.status)),
    h('td', {}, r.app || '–'),
    h('td', {}, r.agent || '–'),
    h('td', { class: 'num' }, ms(r.latencyMs)),
    h('td', { class: 'num' }, r.priceUnknown ? 'unknown' : money(r.costUsd)),
    h('td', { class: 'num' }, saved));
}

function empty(filters, offset) {
  const filtered = FILTERS.some((k) => filters[k]);
  if (offset > 0) return h('p', { class: 'empty' }, 'No runs on this page. ', link('#/runs' + qs(filters), 'Go to the newest runs.'));
  if (filtered) return h('p', { class: 'empty', id: 'runs-empty' }, 'No runs match these filters. ', link('#/runs', 'Clear the filters.'));
  return h('p', { class: 'empty', id: 'runs-empty' }, 'No runs yet. New runs appear here as they are recorded. ',
    link('#/start', 'Get started'), ' to send the first ones.');
}
