// The console: who is here (a signed-in person, or anyone in open dev mode),
// the frame around the views (header, organization switcher, navigation) and
// the router that shows one view at a time from the address's #fragment.
// Every view is its own module under views/, loaded when first shown; see
// README.md for how a view is written.
import { api, $, say, show, hide, setText, onSubmit } from '/account.js';
import { h, clear } from './lib/dom.js';
import { startSignedOut } from './signin.js';
import { operates } from './lib/ui.js';

// The views, in the order the navigation lists them. A route is the part of
// the fragment before any '?': '#/runs/abc' is route 'runs' with id 'abc'.
// group places the link in the navigation; detail routes have no link.
// adminOnly views read an API only owners and admins may: members get no
// link; operatorOnly ones, an API only the default organization's may.
export const VIEWS = [
  { route: 'overview', module: 'overview', title: 'Overview', group: 'Gateway' },
  { route: 'runs', module: 'runs', title: 'Runs', group: 'Gateway' },
  { route: 'runs/:id', module: 'run', title: 'Run' },
  { route: 'approvals', module: 'approvals', title: 'Approvals', group: 'Gateway' },
  { route: 'policies', module: 'policies', title: 'Policies', group: 'Gateway' },
  { route: 'policies/:id', module: 'policy', title: 'Rule' },
  { route: 'budgets', module: 'budgets', title: 'Budgets', group: 'Gateway' },
  { route: 'providers', module: 'providers', title: 'Providers', group: 'Gateway', operatorOnly: true },
  { route: 'learning', module: 'learning', title: 'Learning', group: 'Gateway' },
  { route: 'patterns/:id', module: 'pattern', title: 'Pattern' },
  { route: 'artifacts/:id', module: 'artifact', title: 'Artifact' },
  { route: 'caches', module: 'caches', title: 'Caches', group: 'Gateway' },
  { route: 'agents', module: 'agents', title: 'Agents', group: 'Gateway' },
  { route: 'web', module: 'web', title: 'Web', group: 'Gateway' },
  { route: 'keys', module: 'keys', title: 'API keys', group: 'Manage' },
  { route: 'settings', module: 'settings', title: 'Settings', group: 'Manage' },
  { route: 'org', module: 'org', title: 'Organization', group: 'Manage', accountOnly: true },
  { route: 'audit', module: 'audit', title: 'Audit', group: 'Manage' },
  { route: 'jobs', module: 'jobs', title: 'Jobs', group: 'Manage' },
  { route: 'start', module: 'start', title: 'Get started', group: 'Manage' },
];

// session is who the console acts for; see README.md.
let session = null;

async function start() {
  const me = await api('GET', '/api/v1/auth/me');
  if (me.ok && me.data && me.data.user) {
    await signedIn(me.data.user);
    return;
  }
  // No session. Open dev mode (no users yet) serves the API without one,
  // as the admin of the default tenant.
  const runs = await api('GET', '/api/v1/runs?limit=1');
  if (runs.ok) {
    session = { mode: 'open', user: null, role: 'admin', canAct: true, tenantId: '', orgName: 'Default', orgs: [] };
    setText('whoami', 'Open dev mode: anyone here acts as the admin of the default organization.');
    hide('sign-out', 'switch-form', 'org-name');
    show('account-bar');
    enterConsole();
    return;
  }
  signedOut();
}

function signedOut() {
  session = null;
  leaveView();
  // The previous person's page (a key's token, an invitation link) must not
  // stay in the hidden DOM, nor a view still loading draw into it.
  generation++;
  $('view').replaceChildren();
  hide('account-bar', 'console', 'verify-banner');
  startSignedOut(async (user) => signedIn(user));
}

async function signedIn(user) {
  const label = user.name ? `${user.name} (${user.email})` : user.email;
  setText('whoami', 'Signed in as ' + label);
  setText('verify-email-address', user.email);
  $('verify-banner').hidden = user.emailVerified !== false;
  $('resend-verification').disabled = false;
  show('account-bar', 'sign-out');
  session = { mode: 'account', user, role: 'member', canAct: false, tenantId: '', orgName: '', orgs: [] };
  await loadOrgs();
  enterConsole();
}

// loadOrgs reads the person's organizations and their role in the active
// one, and fills the switcher.
async function loadOrgs() {
  const res = await api('GET', '/api/v1/orgs');
  const select = $('org-select');
  select.replaceChildren();
  if (!res.ok) {
    say('The organizations could not be loaded: ' + res.error.message, 'error');
    hide('switch-form');
    return;
  }
  const orgs = (res.data && res.data.orgs) || [];
  session.orgs = orgs;
  for (const org of orgs) {
    if (org.active) {
      session.role = org.role;
      session.canAct = org.role === 'owner' || org.role === 'admin';
      session.tenantId = org.tenantId;
      session.orgName = org.name;
    }
    select.append(h('option', { value: org.tenantId, selected: !!org.active }, org.name));
  }
  setText('org-name', session.orgName);
  $('switch-form').hidden = orgs.length < 2;
  $('org-name').hidden = orgs.length >= 2;
}

// refreshSession reads the person and their organizations again, after an
// action that changes them (leaving or deleting an org, a role change).
export async function refreshSession() {
  const me = await api('GET', '/api/v1/auth/me');
  if (me.ok && me.data && me.data.user) {
    await signedIn(me.data.user);
  } else if (session && session.mode === 'open') {
    enterConsole();
  } else {
    signedOut();
  }
}

function enterConsole() {
  hide('signed-out', 'loading');
  buildNav();
  show('console');
  route();
}

function buildNav() {
  const nav = $('nav-list');
  nav.replaceChildren();
  let group = '';
  let list = null;
  for (const v of VIEWS) {
    if (!v.group || (v.accountOnly && session.mode !== 'account') || (v.adminOnly && !session.canAct) || (v.operatorOnly && !operates(session))) continue;
    if (v.group !== group) {
      group = v.group;
      list = h('ul', {});
      nav.append(h('li', { class: 'nav-group' }, h('span', { class: 'nav-title' }, group), list));
    }
    list.append(h('li', {}, h('a', { href: '#/' + v.route, dataset: { route: v.route } }, v.title)));
  }
}

// parse splits the fragment into the matching view and its parameters.
function parse(hash) {
  const raw = hash.replace(/^#\/?/, '');
  const [path, qs] = raw.split('?', 2);
  let parts;
  try {
    parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    // A malformed escape (#/runs/%E0) names no page.
    return { view: null, params: {}, query: new URLSearchParams() };
  }
  if (parts.length === 0) return { view: VIEWS[0], params: {}, query: new URLSearchParams(qs || '') };
  for (const v of VIEWS) {
    const pat = v.route.split('/');
    if (pat.length !== parts.length) continue;
    const params = {};
    if (pat.every((p, i) => (p.startsWith(':') ? ((params[p.slice(1)] = parts[i]), true) : p === parts[i]))) {
      if (v.accountOnly && session.mode !== 'account') break;
      return { view: v, params, query: new URLSearchParams(qs || '') };
    }
  }
  return { view: null, params: {}, query: new URLSearchParams(qs || '') };
}

let leaving = [];
let generation = 0;

function leaveView() {
  for (const fn of leaving) {
    try {
      fn();
    } catch (err) {
      console.warn('leaving a view:', err);
    }
  }
  leaving = [];
}

// route shows the view the address names.
async function route() {
  if (!session) return;
  leaveView();
  const gen = ++generation;
  let parsed;
  try {
    parsed = parse(window.location.hash);
  } catch {
    parsed = { view: null, params: {}, query: new URLSearchParams() };
  }
  const { view, params, query } = parsed;
  const root = $('view');
  for (const a of document.querySelectorAll('#nav-list a')) {
    const current = view && (a.dataset.route === view.route || view.route.startsWith(a.dataset.route + '/') ||
      (view.module === 'pattern' || view.module === 'artifact') && a.dataset.route === 'learning');
    if (current) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (!view) {
    document.title = 'Not found · svc';
    clear(root, h('h1', { tabindex: '-1' }, 'Not found'),
      h('p', {}, 'The console has no page at this address. ', h('a', { href: '#/overview' }, 'Go to the overview.')));
    root.querySelector('h1').focus();
    return;
  }
  document.title = view.title + ' · svc';
  root.setAttribute('aria-busy', 'true');
  clear(root, h('h1', { tabindex: '-1' }, view.title), h('p', { class: 'quiet' }, 'Loading…'));
  const ctx = {
    root,
    params,
    query,
    session,
    navigate: (to) => {
      window.location.hash = to;
    },
    say,
    onLeave: (fn) => leaving.push(fn),
    // current reports whether this view is still the one shown: a view
    // that awaits must not draw over the next one.
    current: () => gen === generation,
    refreshSession,
  };
  try {
    const mod = await import(`./views/${view.module}.js`);
    if (gen !== generation) return;
    await mod.render(ctx);
  } catch (err) {
    if (gen !== generation) return;
    // An error, not a warning: a view that cannot load or draw is a fault
    // the browser tests must see.
    console.error('view', view.module, err);
    clear(root, h('h1', { tabindex: '-1' }, view.title),
      h('p', { class: 'status', dataset: { kind: 'error' } }, 'This page could not be shown: ' + (err && err.message ? err.message : String(err))));
  } finally {
    if (gen === generation) root.removeAttribute('aria-busy');
  }
  if (gen !== generation) return;
  // A view that put the focus somewhere of its own (a linked record) keeps it.
  const active = document.activeElement;
  if (active && active !== root && root.contains(active)) return;
  const heading = root.querySelector('h1');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus({ preventScroll: false });
  }
}

window.addEventListener('hashchange', () => {
  say('');
  route();
});

onSubmit($('switch-form'), async () => {
  const select = $('org-select');
  const tenantId = select.value;
  const name = select.selectedOptions.length ? select.selectedOptions[0].textContent : tenantId;
  const res = await api('POST', '/api/v1/orgs/switch', { tenantId });
  if (!res.ok) {
    say(res.error.message, 'error');
    return;
  }
  await loadOrgs();
  buildNav();
  await route();
  say('Switched to ' + name + '.', 'ok');
});

// The resend button is off while its request runs and after it succeeded,
// so one click sends one mail; an address verified meanwhile (409
// already_verified) hides the banner.
$('resend-verification').addEventListener('click', async (event) => {
  const b = event.currentTarget;
  b.disabled = true;
  const res = await api('POST', '/api/v1/auth/verify/resend', {});
  if (res.ok) {
    say('We sent the link again. It may take a minute to arrive.', 'ok');
    return;
  }
  b.disabled = false;
  if (res.error.code === 'already_verified') {
    const me = await api('GET', '/api/v1/auth/me');
    if (me.ok && me.data && me.data.user && me.data.user.emailVerified !== false) {
      hide('verify-banner');
      say('Your email address is already verified.', 'ok');
      return;
    }
  }
  say(res.error.message, 'error');
});

$('sign-out').addEventListener('click', async () => {
  const res = await api('POST', '/api/v1/auth/logout', {});
  if (!res.ok) {
    say(res.error.message, 'error');
    return;
  }
  // replaceState drops the fragment without a hashchange, whose handler
  // would wipe the message below.
  history.replaceState(null, '', window.location.pathname + window.location.search);
  signedOut();
  say('You are signed out.');
});

start();
