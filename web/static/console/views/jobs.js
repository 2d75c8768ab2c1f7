// Jobs: the organization's background work (webhook deliveries, learning
// passes, retention sweeps) by state, with the attempts each took and the
// last error. A failed job has spent its attempts or met a permanent error;
// a queued one with an error is waiting to be retried.
import { h, clear, table, badge, pre } from '../lib/dom.js';
import { time, num } from '../lib/format.js';
import { page, load, api, qs } from '../lib/ui.js';

const STATES = [
  { status: '', label: 'All' },
  { status: 'queued', label: 'Queued' },
  { status: 'running', label: 'Running' },
  { status: 'succeeded', label: 'Succeeded' },
  { status: 'failed', label: 'Failed' },
];
const KIND = { queued: 'info', running: 'warn', succeeded: 'ok', failed: 'bad' };

// REFRESH is how often the shown list is read again, in milliseconds.
const REFRESH = 5000;

export async function render(ctx) {
  page(ctx, 'Jobs', 'Work svc does after answering a request: webhook deliveries, learning passes and retention sweeps. Failed attempts are retried with a growing pause.');
  const status = ctx.query.get('status') || '';
  const data = await load(ctx, '/api/v1/jobs' + qs({ status, limit: LIMIT }), 'The jobs');
  if (!data) return;
  const states = h('nav', { class: 'tabs', 'aria-label': 'Jobs by state', id: 'job-states' });
  const box = h('div', { id: 'job-list' });
  const updated = h('p', { class: 'live', id: 'jobs-updated' });
  ctx.root.append(states, box, updated);
  draw(ctx, status, data, states, box, updated);
  // The list follows the queue while it is shown, except while a person
  // has a payload open or is moving through the list by keyboard (a redraw
  // would take their focus away), and while the tab is hidden. Signed out,
  // it stops and says so.
  const timer = setInterval(async () => {
    if (document.hidden || box.querySelector('details[open]') || box.contains(document.activeElement)) return;
    const res = await api('GET', '/api/v1/jobs' + qs({ status, limit: LIMIT }));
    if (!ctx.current()) return;
    if (res.status === 401) {
      clearInterval(timer);
      updated.textContent = 'Updates stopped: you are signed out. Sign in again to see the queue.';
      return;
    }
    if (!res.ok) return;
    draw(ctx, status, res.data, states, box, updated);
  }, REFRESH);
  ctx.onLeave(() => clearInterval(timer));
}

const LIMIT = 200;

function draw(ctx, status, data, states, box, updated) {
  const stats = data.stats || {};
  const total = (stats.queued || 0) + (stats.running || 0) + (stats.succeeded || 0) + (stats.failed || 0);
  const focused = document.activeElement && states.contains(document.activeElement) ? document.activeElement.dataset.status : '';
  clear(states, h('ul', {},
    STATES.map((s) => h('li', {}, h('a', {
      href: '#/jobs' + qs({ status: s.status }),
      'aria-current': s.status === status ? 'page' : null,
      dataset: { status: s.status || 'all' },
    }, s.label, ' ', h('span', { class: 'count' }, num(s.status ? stats[s.status] || 0 : total)))))));
  if (focused) states.querySelector(`[data-status="${focused}"]`)?.focus();
  const jobs = data.jobs || [];
  clear(box, table([
    { label: 'Type', cell: (j) => h('code', {}, j.type) },
    { label: 'State', cell: (j) => badge(j.status, KIND[j.status] || 'info') },
    { label: 'Attempts', class: 'num', cell: (j) => `${num(j.attempts)} of ${num(j.maxAttempts)}` },
    { label: 'Last error', cell: (j) => (j.lastError ? h('span', { class: 'job-error' }, j.lastError) : h('span', { class: 'quiet' }, 'none')) },
    { label: 'Next attempt', cell: (j) => (j.status === 'queued' ? time(j.runAt) : '–') },
    { label: 'Created', cell: (j) => time(j.createdAt) },
    { label: 'Updated', cell: (j) => time(j.updatedAt) },
    { label: 'Payload', cell: (j) => h('details', {}, h('summary', {}, 'Show'), pre(j.payload)) },
  ], jobs, status ? `No ${status} jobs.` : 'No jobs yet.'),
  jobs.length >= LIMIT ? h('p', { class: 'quiet' }, `The ${LIMIT} newest are shown.`) : null);
  const trs = box.querySelectorAll('tbody tr');
  jobs.forEach((j, i) => trs[i].setAttribute('data-job', j.id));
  updated.textContent = 'Updated ' + new Date().toLocaleTimeString() + '; the list refreshes every few seconds.';
}
