// Providers: the provider instances svc routes calls to, how each stands
// (its circuit breaker, a rate limit, its attempts and last error), the
// retry budget and the routes, and how the last load or reload of the
// providers file went (a refused reload keeps the last good set: the error
// says why). The page is read again every few seconds while it is shown.
import { h, clear, button, table, section, dl, badge } from '../lib/dom.js';
import { num, ms, time, plural } from '../lib/format.js';
import { page, load, api, operates } from '../lib/ui.js';
import { refusal, words } from '../lib/governance.js';

// REFRESH is how often the shown status is read again, in milliseconds.
const REFRESH = 5000;

export async function render(ctx) {
  page(ctx, 'Providers', 'The upstream providers svc routes calls to. A call that fails before its first byte is retried on the next provider of its route; ' +
    'a provider that keeps failing is taken out of rotation by its circuit breaker until its cooldown has passed.');
  const data = await load(ctx, '/api/v1/providers', 'The providers');
  if (!data) return;
  const state = h('div', { class: 'providers-load' });
  const result = h('div', { class: 'reload-result' });
  const body = h('div', { id: 'providers-body' });
  const updated = h('p', { class: 'live', id: 'providers-updated' });
  const draw = (st) => {
    clear(state, loadState(st));
    clear(body, providersSection(st), routesSection(st));
    updated.textContent = 'Updated ' + new Date().toLocaleTimeString() + '; read again every ' + REFRESH / 1000 + ' seconds while this page is open.';
  };

  let action = null;
  if (operates(ctx.session)) {
    action = h('div', { class: 'toolbar' }, button('Reload the providers file', async () => {
      result.replaceChildren();
      const res = await api('POST', '/api/v1/providers/reload', {});
      if (!ctx.current()) return;
      if (res.ok) {
        ctx.say(`Reloaded: ${plural((res.data.providers || []).length, 'provider')} in use.`, 'ok');
        draw(res.data);
        return;
      }
      ctx.say(res.error.message, 'error');
      result.append(refusal(res.error, 'The reload was refused: '));
      // A refused reload answers with the status beside the error (the
      // last good set, ok false); a 403 has none, so read it again.
      const again = res.data && res.data.status ? { ok: true, data: res.data.status } : await api('GET', '/api/v1/providers');
      if (ctx.current() && again.ok) draw(again.data);
    }, { class: 'reload', id: 'providers-reload' }));
  }
  ctx.root.append(section('Providers file', state, result, action), body, updated);
  draw(data);

  // The status follows the breakers while it is shown, except while the
  // tab is hidden or a person moves through it by keyboard (a redraw would
  // take their focus away). Signed out, it stops and says so.
  const timer = setInterval(async () => {
    if (document.hidden || body.contains(document.activeElement)) return;
    const res = await api('GET', '/api/v1/providers');
    if (!ctx.current()) return;
    if (res.status === 401) {
      clearInterval(timer);
      updated.textContent = 'Updates stopped: you are signed out. Sign in again to see the providers.';
      return;
    }
    if (res.ok) draw(res.data);
  }, REFRESH);
  ctx.onLeave(() => clearInterval(timer));
}

// loadState says where the providers come from, when they were loaded, and
// a refused reload's error; and the retry budget every call shares.
function loadState(st) {
  const r = st.retries || {};
  const from = st.source ? h('code', { class: 'providers-source' }, st.source)
    : 'the environment (no providers file: SVC_PROVIDERS_FILE is not set)';
  const retries = r.maxAttempts > 1
    ? `up to ${plural(r.maxAttempts, 'attempt')} a call, all providers together; a retry on a provider already tried waits ${ms(r.backoffMs)}, doubling up to ${ms(r.maxBackoffMs)}, with jitter`
    : '1 attempt a call: no retry, no fallback';
  return [
    st.ok
      ? h('p', { class: 'reload-ok' }, 'Loaded ', plural((st.providers || []).length, 'provider'), ' ', time(st.loadedAt), '.')
      : h('div', { class: 'status reload-failed', role: 'alert', dataset: { kind: 'error' } },
        h('p', {}, 'The last reload (', time(st.failedAt || st.loadedAt), ') was refused; the last good set stays in use (loaded ', time(st.loadedAt), ').'),
        h('p', { class: 'reload-error' }, st.error || 'The loader gave no reason.')),
    dl([['Source', from], ['Retries', retries]], { class: 'facts', id: 'providers-retries' }),
  ];
}

// BREAKER colours a breaker's state: closed serves, half-open lets one
// probe through, open is out of rotation.
const BREAKER = { closed: 'ok', half_open: 'warn', open: 'bad' };

// breakerFacts says how a breaker stands beyond its state: until when it
// stays open, and how many failures in a row it has counted of those that
// open it.
function breakerFacts(b) {
  const parts = [];
  if (b.openUntil) parts.push(h('span', { class: 'open-until' }, 'open until ', time(b.openUntil), '; '));
  parts.push(b.failures > 0
    ? `${plural(b.consecutiveFailures || 0, 'failure')} in a row (opens at ${num(b.failures)}, for ${ms(b.cooldownMs)})`
    : 'off: this provider is never taken out of rotation');
  return parts;
}

// providerCard lays out one provider instance: what it is and how it
// stands, its breaker's state as a badge in its heading.
function providerCard(p) {
  const b = p.breaker || {};
  const state = b.state || 'closed';
  const stats = p.stats || {};
  return h('article', { class: 'provider-card', dataset: { provider: p.name } },
    h('h3', {}, h('span', { class: 'provider-name' }, p.name), ' ',
      h('span', { class: 'breaker', dataset: { state, provider: p.name } }, badge(words(state), BREAKER[state] || 'info')), ' ',
      badge(p.mode === 'in_process' ? 'in process' : 'plugin', 'info'),
      p.rateLimitedUntil ? [' ', badge('rate limited', 'warn')] : null),
    dl([
      ['Plugin', h('code', {}, p.plugin)],
      ['Base URL', p.baseUrl ? h('code', { class: 'provider-url' }, p.baseUrl) : 'the plugin’s default'],
      ['Models', (p.models || []).length ? (p.models || []).map((m, i) => [i ? ', ' : '', h('code', {}, m)]) : 'every model'],
      ['Weight', num(p.weight)],
      ['Timeout', p.timeoutMs ? ms(p.timeoutMs) + ' an attempt' : 'none'],
      ['Breaker', h('span', { class: 'breaker-facts' }, breakerFacts(b))],
      ['Rate limited', p.rateLimitedUntil ? ['until ', time(p.rateLimitedUntil)] : null],
      ['Attempts', `${num(stats.attempts || 0)}, ${plural(stats.failures || 0, 'failure')}`],
      ['Last error', p.lastError ? h('span', { class: 'provider-error' }, p.lastError, ' (', time(p.lastErrorAt), ')') : null],
    ]));
}

function providersSection(st) {
  const list = st.providers || [];
  return section(`Providers (${list.length})`, list.length
    ? h('div', { class: 'provider-cards' }, list.map(providerCard))
    : h('p', { class: 'empty' }, 'No provider is configured.'));
}

function routesSection(st) {
  const routes = st.routes || [];
  const intro = h('p', { class: 'quiet' }, 'A model with no route goes to every provider that serves it, in the file’s order.');
  return section(`Routes (${routes.length})`, intro, table([
    { label: 'Model', cell: (r) => h('code', { class: 'route-model' }, r.model) },
    { label: 'Strategy', cell: (r) => words(r.strategy || 'ordered') },
    { label: 'Targets', cell: (r) => h('ol', { class: 'route-targets' }, (r.targets || []).map((t) => h('li', {},
      h('strong', {}, t.provider), t.model ? [' → ', h('code', {}, t.model)] : null,
      r.strategy === 'weighted' ? ` (weight ${num(t.weight)})` : null))) },
  ], routes, 'No route: every model goes to the providers that serve it, in the file’s order.', 'Routes'));
}
