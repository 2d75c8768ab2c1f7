// What the account pages share: calls to svc's API, the status line, and
// helpers that show one part of a page at a time. Everything a person typed
// or the server named is written with textContent, never as HTML.

const NETWORK_ERROR = {
  code: 'network',
  message: 'svc could not be reached. Check your connection and try again.',
};

// api calls svc's API on this origin with the session cookie. It never
// throws: it resolves to {status, ok, data, error}, where error is the
// server's {code, message} (or one made up for a failure without a body).
export async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    return { status: 0, ok: false, data: null, error: NETWORK_ERROR };
  }
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (res.ok) {
    return { status: res.status, ok: true, data, error: null };
  }
  let error = data && typeof data.error === 'object' && data.error !== null ? data.error : null;
  if (!error || typeof error.message !== 'string' || error.message === '') {
    error = { code: (error && error.code) || 'http_' + res.status, message: `svc answered ${res.status} ${res.statusText}`.trim() + '.' };
  }
  if (res.status === 429) {
    const wait = Number(res.headers.get('retry-after'));
    if (wait > 0) {
      error = { ...error, message: `${error.message} Try again in ${wait} second${wait === 1 ? '' : 's'}.` };
    }
  }
  return { status: res.status, ok: false, data, error };
}

// $ finds the element with the given id.
export function $(id) {
  const el = document.getElementById(id);
  if (!el) {
    throw new Error('no element #' + id);
  }
  return el;
}

// say writes a message in the page's status region (#status, an aria-live
// region that stays in the page so that changes are announced), as
// information ('info'), success ('ok') or a problem ('error'); '' clears it.
export function say(text, kind = 'info') {
  const status = $('status');
  status.textContent = text;
  status.dataset.kind = kind;
}

// show un-hides the elements with the given ids; hide hides them.
export function show(...ids) {
  for (const id of ids) $(id).hidden = false;
}

export function hide(...ids) {
  for (const id of ids) $(id).hidden = true;
}

// only shows one of the sections with the given class and hides the rest,
// then moves the focus to the shown section's heading so that a screen
// reader announces the change.
export function only(id, cls = 'view') {
  for (const el of document.querySelectorAll('.' + cls)) {
    el.hidden = el.id !== id;
  }
  const heading = $(id).querySelector('h1, h2');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus();
  }
}

// setText writes text into the element with the given id.
export function setText(id, text) {
  $(id).textContent = text;
}

// token is the page's one-time token from its ?token= query parameter, or ''.
export function token() {
  return new URLSearchParams(window.location.search).get('token') || '';
}

export const MIN_PASSWORD = 8;

// checkNewPassword returns what is wrong with a new password and its
// confirmation, or '' when they will do. It marks the fields for assistive
// technology.
export function checkNewPassword(passwordField, confirmField) {
  const pw = passwordField.value;
  let problem = '';
  let bad = null;
  if (pw.length < MIN_PASSWORD) {
    problem = `Choose a password of at least ${MIN_PASSWORD} characters.`;
    bad = passwordField;
  } else if (pw !== confirmField.value) {
    problem = 'The two passwords do not match.';
    bad = confirmField;
  }
  passwordField.setAttribute('aria-invalid', String(bad === passwordField));
  confirmField.setAttribute('aria-invalid', String(bad === confirmField));
  if (bad) bad.focus();
  return problem;
}

// onSubmit runs handler when form is submitted, with its buttons disabled
// and the form marked busy until handler settles. The browser's own
// submission never happens: the pages speak JSON to the API.
export function onSubmit(form, handler) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (form.getAttribute('aria-busy') === 'true') return;
    await busy(form, () => handler(event));
  });
}

// onClick is onSubmit for a lone button.
export function onClick(button, handler) {
  button.addEventListener('click', async (event) => {
    event.preventDefault();
    if (button.disabled) return;
    await busy(button, () => handler(event));
  });
}

async function busy(el, fn) {
  const buttons = el.tagName === 'BUTTON' ? [el] : [...el.querySelectorAll('button')];
  el.setAttribute('aria-busy', 'true');
  for (const b of buttons) b.disabled = true;
  try {
    await fn();
  } catch (err) {
    say('Something went wrong in this page: ' + (err && err.message ? err.message : String(err)), 'error');
  } finally {
    el.setAttribute('aria-busy', 'false');
    for (const b of buttons) b.disabled = false;
  }
}
