// The sign-in form, and the sign-up form when svc allows public signup.
import { api, $, say, only, hide, checkNewPassword, onSubmit } from '/account.js';

let signedInHandler = async () => {};

// startSignedOut shows the sign-in form; onSignedIn(user) runs once a
// person has signed in or up.
export async function startSignedOut(onSignedIn) {
  signedInHandler = onSignedIn;
  hide('loading');
  only('signed-out');
  $('login-email').focus();
  const health = await api('GET', '/health');
  $('signup').hidden = !(health.data && health.data.publicSignup === true);
}

async function afterSignIn() {
  const me = await api('GET', '/api/v1/auth/me');
  if (me.ok && me.data && me.data.user) {
    hide('signed-out');
    await signedInHandler(me.data.user);
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
  await afterSignIn();
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
  await afterSignIn();
  say('Your account is ready. We sent you an email to verify your address.', 'ok');
});
