// Caches: each tier's entries and hits for this organization; owners and
// admins empty a tier, or every tier.
import { h, table, section } from '../lib/dom.js';
import { num } from '../lib/format.js';
import { page, load, api, adminOnly } from '../lib/ui.js';
import { confirmButton, refusal } from '../lib/governance.js';

// The tiers, as the API names them, with what each keeps.
const TIERS = {
  exact_response: { title: 'Exact responses', about: 'Answers to byte-identical chat requests (canonical JSON).' },
  tool_result: { title: 'Tool results', about: 'Results of deterministic tool calls, by tool, subject and arguments.' },
  som: { title: 'Web pages (SOM)', about: 'Compiled pages from web fetches.' },
  negative: { title: 'Negative decisions', about: 'Requests known not to be worth caching or learning from.' },
};

export async function render(ctx) {
  page(ctx, 'Caches', 'What each cache tier holds for this organization. Hits count since svc started.');
  const data = await load(ctx, '/api/v1/cache/stats', 'The cache figures');
  if (!data) return;
  const stats = data.stats || [];
  const result = h('div', { class: 'action-result' });
  const empty = (tier) => async () => {
    result.replaceChildren();
    const res = await api('POST', '/api/v1/cache/invalidate', tier ? { cacheType: tier } : {});
    if (!ctx.current()) return;
    if (!res.ok) {
      ctx.say(res.error.message, 'error');
      result.append(refusal(res.error, 'The cache was not emptied: '));
      return;
    }
    ctx.say(tier ? `Emptied the ${(TIERS[tier] || { title: tier }).title.toLowerCase()} cache.` : 'Emptied every cache tier.', 'ok');
    await render(ctx);
    if (ctx.current()) ctx.root.querySelector('h1')?.focus();
  };
  const s = section('Tiers', table([
    { label: 'Tier', cell: (st) => h('div', {}, h('strong', {}, (TIERS[st.cacheType] || { title: st.cacheType }).title),
      ' ', h('code', { class: 'small' }, st.cacheType),
      TIERS[st.cacheType] ? h('div', { class: 'quiet small' }, TIERS[st.cacheType].about) : null) },
    { label: 'Entries', class: 'num', cell: (st) => num(st.entries) },
    { label: 'Hits', class: 'num', cell: (st) => num(st.hits) },
    ...(ctx.session.canAct ? [{ label: 'Invalidate', cell: (st) => confirmButton('Empty',
      `Empty the ${(TIERS[st.cacheType] || { title: st.cacheType }).title.toLowerCase()} cache?`, empty(st.cacheType),
      { danger: true }) }] : []),
  ], stats, 'No cache tier reported.'), result,
  adminOnly(ctx, h('div', { class: 'toolbar' },
    confirmButton('Empty every tier', 'Empty every cache tier of this organization?', empty(''), { danger: true }))));
  s.classList.add('cache-tiers');
  ctx.root.append(s);
}
