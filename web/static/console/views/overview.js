// Overview: what the gateway did and saved over the retention window, how
// often its caches and artifacts served, and what waits for a person.
import { h, link, section, table } from '../lib/dom.js';
import { money, num, pct, ms, plural } from '../lib/format.js';
import { lineChart, barChart } from '../lib/chart.js';
import { page, problem, api, qs } from '../lib/ui.js';

// ROUTES are the routes a run can take, in the order people read them.
export const ROUTES = [
  { route: 'live', label: 'Live', kind: 'a' },
  { route: 'exact_cache', label: 'Exact cache', kind: 'b' },
  { route: 'artifact', label: 'Artifact', kind: 'd' },
  { route: 'blocked', label: 'Blocked', kind: 'c' },
];

// TIERS names the cache tiers as people read them.
const TIERS = {
  exact_response: 'Exact responses',
  tool_result: 'Tool results',
  som: 'Web pages (SOM)',
  negative: 'Negative (known failures)',
};

// MAX_DAYS bounds the daily charts when the retention window is very long.
const MAX_DAYS = 366;

export async function render(ctx) {
  page(ctx, 'Overview', 'What the gateway did, what it saved, and what waits for you.');
  // Everything at once; each part shows its own problem if its call fails.
  const [savings, settings, stats, approvals, artifacts, jobs, ...byRoute] = await Promise.all([
    api('GET', '/api/v1/savings'),
    api('GET', '/api/v1/settings'),
    api('GET', '/api/v1/cache/stats'),
    api('GET', '/api/v1/approvals?status=pending'),
    api('GET', '/api/v1/artifacts'),
    api('GET', '/api/v1/jobs?status=failed'),
    ...ROUTES.map((r) => api('GET', '/api/v1/runs' + qs({ route: r.route, limit: 1 }))),
  ]);
  if (!ctx.current()) return;
  const root = ctx.root;

  if (!savings.ok) {
    root.append(problem(savings.error, 'The savings summary could not be loaded: '));
  } else if (savings.data.totalRuns === 0) {
    root.append(h('section', { class: 'panel cta', id: 'get-started' },
      h('h2', {}, 'No runs yet'),
      h('p', {}, 'This organization has not sent a request through the gateway yet. Load the demo to see runs, a cache hit, a policy verdict and a learned artifact, or point your client at svc.'),
      h('p', {}, h('a', { class: 'button', href: '#/start' }, 'Get started'))));
  }

  root.append(attention(approvals, artifacts, jobs));

  if (savings.ok) {
    const s = savings.data;
    root.append(h('div', { class: 'cards', id: 'savings-cards' },
      card('Runs', num(s.totalRuns), `${num(s.liveRuns)} live · ${num(s.optimizedRuns)} optimized · ${num(s.blockedRuns)} blocked`, 'runs'),
      card('Cost', money(s.totalCostUsd), 'paid to providers', 'cost'),
      card('Saved', money(s.totalSavedUsd), `${ms(s.totalSavedMs)} of waiting avoided`, 'saved'),
      card('Ghost savings', money(s.ghostSavedUsd), 'what observe-mode runs would have saved', 'ghost'),
      card('Cache hit rate', pct(s.cacheHitRate), 'runs answered from the exact cache', 'cache-rate'),
      card('Artifact hit rate', pct(s.artifactHitRate), 'runs answered by a promoted artifact', 'artifact-rate'),
      s.somTokensSaved ? card('Web tokens saved', num(s.somTokensSaved), 'prompt tokens saved by compiled pages', 'som') : null));
    const days = retentionDays(settings);
    root.append(dailyCharts(s.daily || [], days));
  }
  root.append(routes(byRoute));
  root.append(caches(stats, savings));
}

// card is one figure: a value, what it is, and a line of detail.
function card(label, value, detail, key) {
  return h('div', { class: 'card', dataset: { card: key } },
    h('span', { class: 'value' }, value),
    h('span', { class: 'label' }, label),
    detail ? h('span', { class: 'detail' }, detail) : null);
}

// attention lists what waits for a person, each with a link to its view.
function attention(approvals, artifacts, jobs) {
  const items = [];
  if (approvals.ok) {
    const n = (approvals.data.approvals || []).length;
    items.push(waiting('approvals', n, n === 1 ? 'approval pending' : 'approvals pending', 'Decide them', '#/approvals', n > 0 ? 'warn' : 'ok'));
  } else {
    items.push(h('li', {}, problem(approvals.error, 'Approvals could not be loaded: ')));
  }
  if (artifacts.ok) {
    const n = (artifacts.data.artifacts || []).filter((a) => a.state === 'quarantined').length;
    items.push(waiting('quarantined', n, n === 1 ? 'artifact quarantined' : 'artifacts quarantined', 'Review them', '#/learning', n > 0 ? 'bad' : 'ok'));
  } else {
    items.push(h('li', {}, problem(artifacts.error, 'Artifacts could not be loaded: ')));
  }
  if (jobs.ok) {
    const stats = jobs.data.stats || {};
    const n = typeof stats.failed === 'number' ? stats.failed : (jobs.data.jobs || []).length;
    items.push(waiting('failed-jobs', n, n === 1 ? 'job failed' : 'jobs failed', 'See the jobs', '#/jobs', n > 0 ? 'bad' : 'ok'));
  } else {
    items.push(h('li', {}, problem(jobs.error, 'Jobs could not be loaded: ')));
  }
  return section('Waiting for you', h('ul', { class: 'attention', id: 'attention' }, items));
}

function waiting(key, n, text, action, href, kind) {
  return h('li', { dataset: { item: key, kind } },
    h('span', { class: 'count' }, num(n)), ' ',
    h('span', { class: 'what' }, text), ' ',
    link(href, action));
}

// retentionDays is the window the daily series covers: the retention
// setting, or 30 days when it cannot be read.
function retentionDays(settings) {
  const d = settings.ok && settings.data.settings ? Number(settings.data.settings.retention_days) : 30;
  return Math.min(MAX_DAYS, Math.max(1, Math.ceil(Number.isFinite(d) && d > 0 ? d : 30)));
}

// fillDays spreads the API's daily series (days with runs only) over every
// UTC day of the window ending today, days without runs counting zero.
export function fillDays(daily, days, today = new Date()) {
  const byDay = new Map(daily.map((d) => [d.day, d]));
  const out = [];
  const end = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
  for (let i = days - 1; i >= 0; i--) {
    const day = new Date(end - i * 86400000).toISOString().slice(0, 10);
    out.push(byDay.get(day) || { day, runs: 0, optimizedRuns: 0, costUsd: 0, savedUsd: 0, ghostSavedUsd: 0 });
  }
  return out;
}

function dailyCharts(daily, days) {
  const filled = fillDays(daily, days);
  const labels = filled.map((d) => d.day);
  return section(`The last ${plural(days, 'day')}`,
    h('div', { class: 'chart-grid' },
      lineChart({
        title: 'Cost and savings per day (UTC)',
        labels,
        series: [
          { name: 'Cost', values: filled.map((d) => d.costUsd), kind: 'a' },
          { name: 'Saved', values: filled.map((d) => d.savedUsd), kind: 'b' },
          { name: 'Ghost-saved', values: filled.map((d) => d.ghostSavedUsd), kind: 'c' },
        ],
        format: money,
      }),
      lineChart({
        title: 'Runs per day (UTC)',
        labels,
        series: [
          { name: 'All runs', values: filled.map((d) => d.runs), kind: 'a' },
          { name: 'Optimized', values: filled.map((d) => d.optimizedRuns), kind: 'b' },
        ],
        format: num,
      })));
}

// routes shows how many runs took each route, each a link to those runs.
function routes(byRoute) {
  const failed = byRoute.find((r) => !r.ok);
  if (failed) return section('Runs by route', problem(failed.error, 'Runs could not be counted: '));
  const items = ROUTES.map((r, i) => ({ label: r.label, value: byRoute[i].data.total || 0, kind: r.kind, route: r.route }));
  return section('Runs by route',
    barChart({ title: 'How many runs took each route (all kept runs)', items, format: num }),
    h('ul', { class: 'route-links', id: 'route-links' }, items.map((it) =>
      h('li', {}, link('#/runs' + qs({ route: it.route }), `${it.label}: ${plural(it.value, 'run')}`, { dataset: { route: it.route } })))));
}

// caches shows each tier's entries and hits. The API counts hits per tier
// but not misses, so a rate is given where the ledger knows it: the exact
// cache's share of runs.
function caches(stats, savings) {
  if (!stats.ok) return section('Caches', problem(stats.error, 'Cache figures could not be loaded: '));
  const rate = savings.ok ? savings.data.cacheHitRate : null;
  const rows = stats.data.stats || [];
  return section('Caches',
    table([
      { label: 'Tier', cell: (s) => TIERS[s.cacheType] || s.cacheType },
      { label: 'Entries', cell: (s) => num(s.entries), class: 'num' },
      { label: 'Hits since start', cell: (s) => num(s.hits), class: 'num' },
      { label: 'Hit rate', cell: (s) => (s.cacheType === 'exact_response' && rate !== null ? pct(rate) : '–'), class: 'num' },
    ], rows, 'No cache tiers.'),
    h('p', { class: 'hint' }, 'The hit rate is the share of runs the exact cache answered; the other tiers count hits but not misses. ',
      link('#/caches', 'Manage the caches')));
}
