// /verify-email?token=T confirms the address the link was sent to.
import { api, say, only, setText, token } from '/account.js';

async function verify() {
  const raw = token();
  if (!raw) {
    setText('failed-detail', 'The link is incomplete: open the whole link from the email.');
    only('failed');
    return;
  }
  const res = await api('GET', '/api/v1/auth/verify/' + encodeURIComponent(raw));
  if (!res.ok) {
    setText('failed-detail', 'Each verification link works once. If you opened it before, your address may already be verified.');
    only('failed');
    say(res.error.message, 'error');
    return;
  }
  setText('verified-email', (res.data && res.data.email) || 'your address');
  only('verified');
  say('Your address is verified.', 'ok');
}

verify();
