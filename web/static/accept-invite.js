// /accept-invite?token=T: look the invitation up, then let a new person
// create their account, or an existing one sign in, and join the org.
import { api, $, say, only, show, setText, token, checkNewPassword, onSubmit, onClick } from '/account.js';

// What each unusable state means to the person holding the link.
const PROBLEMS = {
  invalid: ['This invitation is not valid',
    'The link may be mistyped or incomplete. Ask the person who invited you to send a new invitation.'],
  expired: ['This invitation has expired',
    'Invitations last seven days. Ask the person who invited you to send a new one.'],
  revoked: ['This invitation was withdrawn',
    'An administrator of the organization revoked it. Ask them for a new one if you still need access.'],
  accepted: ['This invitation has already been used',
    'Each invitation works once. Sign in to reach the organization.'],
  unchecked: ['This invitation could not be checked',
    'Reload the page to try again.'],
};

// The error codes of the invitation endpoints that mean the link is spent.
const CODE_STATES = {
  invite_not_found: 'invalid',
  invite_expired: 'expired',
  invite_revoked: 'revoked',
  invite_accepted: 'accepted',
};

const raw = token();
const invitePath = '/api/v1/invites/' + encodeURIComponent(raw);
let invite = null;

function problem(state, message = '') {
  const [title, detail] = PROBLEMS[state] || PROBLEMS.invalid;
  setText('problem-title', title);
  setText('problem-detail', detail);
  $('invite-summary').hidden = true;
  only('problem');
  say(message, message ? 'error' : 'info');
}

function summarize() {
  setText('invite-org', invite.orgName || 'An organization');
  setText('invite-email', invite.email);
  setText('invite-role', invite.role === 'admin' ? 'an admin' : 'a ' + (invite.role || 'member'));
  const expires = invite.expiresAt ? new Date(invite.expiresAt) : null;
  setText('invite-expiry', expires && !Number.isNaN(expires.getTime())
    ? 'The invitation is good until ' + expires.toLocaleString() + '.' : '');
  show('invite-summary');
}

async function lookUp() {
  if (!raw) {
    problem('invalid');
    return;
  }
  const res = await api('GET', invitePath);
  if (!res.ok) {
    if (res.status === 404 || res.status === 400 || CODE_STATES[res.error.code]) {
      problem(CODE_STATES[res.error.code] || 'invalid');
    } else {
      problem('unchecked', res.error.message);
    }
    return;
  }
  invite = res.data || {};
  if (!invite.valid) {
    problem(PROBLEMS[invite.status] ? invite.status : 'invalid');
    return;
  }
  summarize();
  if (!invite.userExists) {
    $('new-email').value = invite.email;
    only('new-user');
    return;
  }
  await chooseForExistingUser();
}

// chooseForExistingUser shows what an existing account holder can do: join
// when signed in as the invitee, sign in when not signed in, sign out when
// signed in as someone else.
async function chooseForExistingUser() {
  const me = await api('GET', '/api/v1/auth/me');
  const user = me.ok && me.data ? me.data.user : null;
  if (!user) {
    showSignIn();
    return;
  }
  if (sameEmail(user.email, invite.email)) {
    setText('join-email', user.email);
    setText('join-button', 'Join ' + (invite.orgName || 'the organization'));
    only('join');
    return;
  }
  setText('other-email', user.email);
  setText('other-invitee', invite.email);
  only('other-user');
}

function showSignIn() {
  $('sign-in-email').value = invite.email;
  $('sign-in-password').value = '';
  only('sign-in');
  $('sign-in-password').focus();
}

function sameEmail(a, b) {
  return String(a || '').trim().toLowerCase() === String(b || '').trim().toLowerCase();
}

// accept accepts the invitation and opens the dashboard, signed in.
async function accept(body) {
  const res = await api('POST', invitePath + '/accept', body);
  if (res.ok) {
    const org = (res.data && res.data.orgName) || invite.orgName || 'the organization';
    say('You joined ' + org + '. Opening the dashboard…', 'ok');
    window.location.assign('/');
    return;
  }
  const state = CODE_STATES[res.error.code];
  if (state) {
    problem(state, res.error.message);
  } else if (res.error.code === 'sign_in_required') {
    showSignIn();
    say(res.error.message, 'error');
  } else if (res.error.code === 'wrong_user') {
    await chooseForExistingUser();
    say(res.error.message, 'error');
  } else {
    say(res.error.message, 'error');
  }
}

onSubmit($('new-user-form'), async () => {
  const nameField = $('new-name');
  const name = nameField.value.trim();
  nameField.setAttribute('aria-invalid', String(name === ''));
  if (name === '') {
    say('Enter your name.', 'error');
    nameField.focus();
    return;
  }
  const wrong = checkNewPassword($('new-password'), $('new-confirm'));
  if (wrong) {
    say(wrong, 'error');
    return;
  }
  say('Creating your account…');
  await accept({ name, password: $('new-password').value });
});

onSubmit($('sign-in-form'), async () => {
  const password = $('sign-in-password').value;
  if (password === '') {
    say('Enter your password.', 'error');
    $('sign-in-password').focus();
    return;
  }
  say('Signing in…');
  const res = await api('POST', '/api/v1/auth/login', { email: invite.email, password });
  if (!res.ok) {
    say(res.error.message, 'error');
    $('sign-in-password').focus();
    return;
  }
  say('Signed in. Joining…');
  await accept({});
});

onClick($('join-button'), async () => {
  say('Joining…');
  await accept({});
});

onClick($('sign-out'), async () => {
  const res = await api('POST', '/api/v1/auth/logout', {});
  if (!res.ok) {
    say(res.error.message, 'error');
    return;
  }
  showSignIn();
  say('Signed out. Sign in as ' + invite.email + ' to accept the invitation.');
});

lookUp();
