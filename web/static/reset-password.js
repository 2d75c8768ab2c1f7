// /reset-password asks for a reset link; /reset-password?token=T sets the
// new password with the link's one-time token.
import { api, $, say, only, setText, token, checkNewPassword, onSubmit } from '/account.js';

const raw = token();

onSubmit($('request-form'), async () => {
  const field = $('request-email');
  const email = field.value.trim();
  field.setAttribute('aria-invalid', String(!email.includes('@')));
  if (!email.includes('@')) {
    say('Enter the email address you sign in with.', 'error');
    field.focus();
    return;
  }
  say('Sending…');
  const res = await api('POST', '/api/v1/auth/password-reset', { email });
  if (!res.ok) {
    say(res.error.message, 'error');
    return;
  }
  setText('requested-email', email);
  only('requested');
  say('');
});

onSubmit($('choose-form'), async () => {
  const wrong = checkNewPassword($('choose-password'), $('choose-confirm'));
  if (wrong) {
    say(wrong, 'error');
    return;
  }
  say('Saving…');
  const res = await api('POST', '/api/v1/auth/password-reset/' + encodeURIComponent(raw),
    { password: $('choose-password').value });
  if (!res.ok) {
    say(res.error.message, 'error');
    return;
  }
  only('done');
  say('Your password is changed. Sign in with it.', 'ok');
});

only(raw ? 'choose' : 'request');
