// Web: fetch a page and read its SOM (the page as regions and elements with
// stable ids, what a model reads and acts on), how it differs from the
// previous snapshot of the address, the snapshots kept, and the open web
// sessions. Owners and admins fetch and close sessions; everyone reads.
import { h, link, table, section, dl, form, field, badge, append } from '../lib/dom.js';
import { bytes, num, time, plural } from '../lib/format.js';
import { page, load, api, adminOnly, qs } from '../lib/ui.js';
import { refusal, confirmButton, words } from '../lib/governance.js';

export async function render(ctx) {
  const snapshotID = ctx.query.get('snapshot') || '';
  page(ctx, 'Web', 'svc fetches pages for agents and compiles each into a SOM: regions and elements with stable ids, a fraction of the HTML\'s size.');
  const result = h('div', { class: 'fetch-result', 'aria-live': 'polite' });
  append(ctx.root, [adminOnly(ctx, section('Fetch a page', form({ class: 'fetch-form' }, [
    field('Address', h('input', { name: 'url', type: 'url', required: true, placeholder: 'https://example.com/', class: 'url-input' })),
    h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'bypassCache' }),
      ' Fetch again even if cached (compares with the previous snapshot)'),
    h('button', { type: 'submit', class: 'fetch' }, 'Fetch'),
  ], async (values) => {
    result.replaceChildren();
    const res = await api('POST', '/api/v1/web/fetch', { url: values.url.trim(), bypassCache: !!values.bypassCache });
    if (!ctx.current()) return;
    if (!res.ok) {
      ctx.say(res.error.message, 'error');
      result.append(refusal(res.error, 'The page could not be fetched: '));
      return;
    }
    ctx.say(res.data.cached ? 'Served from the cache.' : 'Fetched and compiled.', 'ok');
    result.append(fetched(res.data));
    await lists(ctx, listsHolder);
    result.querySelector('h2')?.focus();
  }), result))]);
  const shown = h('div', { class: 'snapshot-shown' });
  ctx.root.append(shown);
  const listsHolder = h('div', { class: 'web-lists' });
  ctx.root.append(listsHolder);
  if (snapshotID) {
    const d = await load(ctx, '/api/v1/web/snapshots/' + encodeURIComponent(snapshotID), 'The snapshot');
    if (d && d.snapshot) {
      const s = d.snapshot;
      shown.append(section(`Snapshot ${s.id}`, dl([
        ['Address', s.url], ['Taken', time(s.createdAt)], ['Compiled by', s.source],
        ['Size', `${bytes(s.htmlBytes)} of HTML → ${bytes(s.somBytes)} of SOM`],
        ['Drift from the previous snapshot', s.driftScore === null || s.driftScore === undefined ? 'first snapshot' : num(s.driftScore)],
      ]), som(s.som)));
    }
  }
  await lists(ctx, listsHolder);
}

// lists draws the kept snapshots and the open sessions into holder.
async function lists(ctx, holder) {
  const [snaps, sessions] = await Promise.all([api('GET', '/api/v1/web/snapshots' + qs({ limit: 20 })), api('GET', '/api/v1/web/sessions')]);
  if (!ctx.current()) return;
  const snapSec = section('Snapshots', snaps.ok ? table([
    { label: 'Taken', cell: (s) => time(s.createdAt) },
    { label: 'Address', cell: (s) => link('#/web' + qs({ snapshot: s.id }), s.url, { class: 'snapshot-link' }) },
    { label: 'Compiled by', cell: (s) => s.source },
    { label: 'HTML → SOM', class: 'num', cell: (s) => `${bytes(s.htmlBytes)} → ${bytes(s.somBytes)}` },
    { label: 'Drift', class: 'num', cell: (s) => (s.driftScore === null || s.driftScore === undefined ? 'first' : num(s.driftScore)) },
  ], snaps.data.snapshots || [], 'No page fetched yet.') : refusal(snaps.error, 'The snapshots could not be loaded: '));
  snapSec.classList.add('snapshots');
  const sessSec = section('Open sessions', sessions.ok ? table([
    { label: 'Session', cell: (s) => h('code', {}, s.id) },
    { label: 'Page', cell: (s) => h('div', {}, s.title || '', s.title ? h('br') : null, h('span', { class: 'small' }, s.url)) },
    { label: 'Opened', cell: (s) => time(s.createdAt) },
    { label: 'Last active', cell: (s) => time(s.lastActiveAt) },
    ...(ctx.session.canAct ? [{ label: 'Close', cell: (s) => confirmButton('Close', 'Close this session?', async () => {
      const res = await api('DELETE', '/api/v1/web/sessions/' + encodeURIComponent(s.id));
      if (!ctx.current()) return;
      if (!res.ok) {
        ctx.say(res.error.message, 'error');
        return;
      }
      ctx.say(`Closed session ${s.id}.`, 'ok');
      await lists(ctx, holder);
      ctx.root.querySelector('.sessions h2')?.focus();
    }, { class: 'secondary close-session' }) }] : []),
  ], sessions.data.sessions || [], 'No web session is open.') : refusal(sessions.error, 'The sessions could not be loaded: '));
  sessSec.classList.add('sessions');
  sessSec.querySelector('h2').setAttribute('tabindex', '-1');
  holder.replaceChildren(snapSec, sessSec);
}

// fetched shows one fetch's answer: where it came from, the diff against
// the previous snapshot, and the SOM.
function fetched(r) {
  const s = section(r.som && r.som.meta && r.som.meta.title ? `Fetched: ${r.som.meta.title}` : 'Fetched',
    dl([
      ['Snapshot', link('#/web' + qs({ snapshot: r.snapshotId }), r.snapshotId)],
      ['Served', r.cached ? 'from the cache' : `compiled by ${r.source}`],
      ['Size', `${bytes(r.htmlBytes)} of HTML → ${bytes(r.somBytes)} of SOM` +
        (r.tokensSavedEstimate > 0 ? ` (about ${plural(r.tokensSavedEstimate, 'token')} saved)` : '')],
    ]),
    r.diff ? diff(r.diff) : h('p', { class: 'quiet' }, r.cached ? 'A cached answer carries no diff.' : 'No earlier snapshot of this address to compare with.'),
    som(r.som));
  s.classList.add('fetched');
  s.querySelector('h2').setAttribute('tabindex', '-1');
  return s;
}

const SIGNIFICANCE = { none: 'ok', low: 'info', medium: 'warn', high: 'bad' };

// diff lays out the changes from the previous snapshot.
function diff(d) {
  return h('div', { class: 'diff' },
    h('h3', {}, 'Since the previous snapshot'),
    h('p', {}, 'Significance ', badge(d.significance, SIGNIFICANCE[d.significance] || 'info'), ' · drift score ',
      h('strong', { class: 'drift' }, num(d.driftScore)), ` · ${num(d.added)} added, ${num(d.removed)} removed, ${num(d.changed)} changed`),
    table([
      { label: 'Change', cell: (c) => words(c.type) },
      { label: 'Element', cell: (c) => (c.id ? h('code', {}, c.id) : '–') },
      { label: 'Kind', cell: (c) => c.kind || '' },
      { label: 'Region', cell: (c) => (c.region ? h('code', {}, c.region) : '') },
      { label: 'Field', cell: (c) => c.field || '' },
      { label: 'Before', cell: (c) => h('span', { class: 'before' }, c.before || '') },
      { label: 'After', cell: (c) => h('span', { class: 'after' }, c.after || '') },
      { label: 'Significance', cell: (c) => badge(c.significance, SIGNIFICANCE[c.significance] || 'info') },
    ], d.changes || [], 'Nothing changed.'));
}

// som lays out a compiled page: its regions, each with its elements.
function som(doc) {
  if (!doc || typeof doc !== 'object') return h('p', { class: 'quiet' }, 'No SOM kept.');
  const meta = doc.meta || {};
  const regions = doc.regions || [];
  const elements = doc.elements || [];
  const c = meta.counts || {};
  return h('div', { class: 'som' },
    h('h3', {}, 'The page as regions and elements'),
    dl([
      ['Title', meta.title || null],
      ['Address', meta.url || null],
      ['Counted', `${plural(c.regions ?? regions.length, 'region')}, ${plural(c.elements ?? elements.length, 'element')}` +
        (c.interactive !== undefined ? `, ${num(c.interactive)} interactive` : '')],
    ]),
    regions.map((r) => {
      const mine = elements.filter((e) => e.region === r.id);
      return h('details', { class: 'region', open: mine.length > 0 && mine.length <= 40, dataset: { region: r.id } },
        h('summary', {}, h('code', {}, r.id), ' ', h('strong', {}, r.role), r.label ? ` “${r.label}”` : '',
          ` · ${plural(mine.length, 'element')}`, r.parent ? [' · in ', h('code', {}, r.parent)] : ''),
        mine.length ? h('ul', { class: 'elements' }, mine.map(element)) : null);
    }),
    (() => {
      const known = new Set(regions.map((r) => r.id));
      const loose = elements.filter((e) => !known.has(e.region));
      return loose.length ? h('details', { class: 'region' }, h('summary', {}, `Outside any region · ${plural(loose.length, 'element')}`),
        h('ul', { class: 'elements' }, loose.map(element))) : null;
    })());
}

function element(e) {
  const text = e.name || e.text || '';
  const extra = [e.href && `→ ${e.href}`, e.type && `type ${e.type}`, e.field && `field ${e.field}`,
    e.price && `${e.price.amount} ${e.price.currency || ''}`.trim(), e.required && 'required', e.disabled && 'disabled']
    .filter(Boolean).join(' · ');
  return h('li', { dataset: { id: e.id } }, h('code', { class: 'el-id' }, e.id), ' ', h('span', { class: 'el-kind' }, e.kind), ' ',
    text ? h('span', { class: 'el-text' }, text) : null, extra ? h('span', { class: 'quiet small' }, ' ' + extra) : null);
}
