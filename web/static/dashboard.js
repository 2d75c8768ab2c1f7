// The dashboard at /: who is signed in, their organizations and the
// onboarding state; a sign-in (and, when svc allows it, a sign-up) form for
// everyone else. In open dev mode, where the API answers without a session,
// it says that the gateway is running.
import { api, $, say, only, show, hide, setText, checkNewPassword, onSubmit, onClick } from '/account.js';

async function start() {
  const me = await api('GET', '/api/v1/auth/me');
  if (me.ok && me.data && me.data.user) {
    await signedIn(me.data.user);
    return;
  }
  // No session. Open dev mode (no users yet) serves the API without one.
  const runs = await api('GET', '/api/v1/runs?limit=1');
  if (runs.ok) {
    only('gateway');
    return;
  }
  await signedOut();
}

async function signedOut() {
  hide('account-bar');
  only('signed-out');
  $('login-email').focus();
  const health = await api('GET', '/health');
  $('signup').hidden = !(health.data && health.data.publicSignup === true);
}

async function signedIn(user) {
  const label = user.name ? `${user.name} (${user.email})` : user.email;
  setText('whoami', 'Signed in as ' + label);
  setText('account-bar-name', label);
  setText('verify-email-address', user.email);
  $('verify-banner').hidden = user.emailVerified !== false;
  show('account-bar');
  only('signed-in');
  show('gateway');
  await loadOrgs();
  await loadOnboarding();
}

// activeRole is the signed-in person's role in the active org.
let activeRole = '';

async function loadOrgs() {
  const res = await api('GET', '/api/v1/orgs');
  const list = $('org-list');
  const select = $('org-select');
  list.replaceChildren();
  select.replaceChildren();
  if (!res.ok) {
    say('The organizations could not be loaded: ' + res.error.message, 'error');
    hide('switch-form');
    return;
  }
  const orgs = (res.data && res.data.orgs) || [];
  activeRole = '';
  for (const org of orgs) {
    if (org.active) activeRole = org.role;
    const item = document.createElement('li');
    const name = document.createElement('span');
    name.textContent = org.name;
    item.append(name, ' · ' + org.role);
    if (org.createdAt) {
      const since = document.createElement('time');
      since.dateTime = org.createdAt;
      since.textContent = 'since ' + org.createdAt.slice(0, 10); // the UTC day
      item.append(' · ', since);
    }
    if (org.active) {
      const active = document.createElement('strong');
      active.textContent = ' (active)';
      item.append(active);
      item.setAttribute('aria-current', 'true');
    }
    list.append(item);

    const option = document.createElement('option');
    option.value = org.tenantId;
    option.textContent = org.name;
    option.selected = !!org.active;
    select.append(option);
  }
  $('switch-form').hidden = orgs.length < 2;
}

async function loadOnboarding() {
  const res = await api('GET', '/api/v1/orgs/active/onboarding');
  if (!res.ok || !res.data || res.data.dismissed) {
    hide('onboarding');
    return;
  }
  const o = res.data;
  const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
  setText('onboarding-state', `This organization has ${plural(o.workflowCount || 0, 'workflow')} and ` +
    `${plural(o.agentCount || 0, 'agent')}, and ${o.hasRuns ? 'has recorded runs' : 'no runs yet'}.`);
  // Loading the demo is for the org's owners and admins.
  const canSeed = activeRole === 'owner' || activeRole === 'admin';
  $('seed-demo').hidden = !canSeed;
  $('seed-demo-about').hidden = !canSeed;
  show('onboarding');
}

async function refreshSession() {
  const me = await api('GET', '/api/v1/auth/me');
  if (me.ok && me.data && me.data.user) {
    await signedIn(me.data.user);
  } else {
    await signedOut();
  }
}

onSubmit($('login-form'), async () => {
  const email = $('login-email').value.trim();
  const password = $('login-password').value;
  if (email === '' || password === '') {
    say('Enter your email and password.', 'error');
    (email === '' ? $('login-email') : $('login-password')).focus();
    return;
  }
  say('Signing in…');
  const res = await api('POST', '/api/v1/auth/login', { email, password });
  if (!res.ok) {
    say(res.error.message, 'error');
    $('login-password').focus();
    return;
  }
  $('login-password').value = '';
  say('');
  await refreshSession();
});

onSubmit($('signup-form'), async () => {
  const name = $('signup-name').value.trim();
  const email = $('signup-email').value.trim();
  if (name === '' || !email.includes('@')) {
    say('Enter your name and email address.', 'error');
    (name === '' ? $('signup-name') : $('signup-email')).focus();
    return;
  }
  const wrong = checkNewPassword($('signup-password'), $('signup-confirm'));
  if (wrong) {
    say(wrong, 'error');
    return;
  }
  say('Creating your account…');
  const res = await api('POST', '/api/v1/auth/signup', { email, name, password: $('signup-password').value });
  if (!res.ok) {
    say(res.error.message, 'error');
    return;
  }
  $('signup-password').value = '';
  $('signup-confirm').value = '';
  say('Your account is ready. We sent you an email to verify your address.', 'ok');
  await refreshSession();
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
  say('Switched to ' + name + '.', 'ok');
  await loadOrgs();
  await loadOnboarding();
});

onClick($('seed-demo'), async () => {
  say('Loading the demo…');
  const res = await api('POST', '/api/v1/orgs/active/seed-demo', {});
  if (!res.ok) {
    say(res.error.message, 'error');
    return;
  }
  say('The demo workflow and agent are loaded.', 'ok');
  await loadOnboarding();
});

onClick($('dismiss-onboarding'), async () => {
  const res = await api('POST', '/api/v1/orgs/active/onboarding/dismiss', {});
  if (!res.ok) {
    say(res.error.message, 'error');
    return;
  }
  hide('onboarding');
  say('Onboarding dismissed.');
});

onClick($('sign-out'), async () => {
  const res = await api('POST', '/api/v1/auth/logout', {});
  if (!res.ok) {
    say(res.error.message, 'error');
    return;
  }
  say('You are signed out.');
  await signedOut();
});

start();
