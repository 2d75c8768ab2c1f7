// Showing the API's refusal of a form next to the field it names: a 400
// answer carries error.param, the name of the field that failed, and the
// message is the API's own.
import { h } from './dom.js';

// clearProblems removes the messages fieldProblem put in f.
export function clearProblems(f) {
  for (const p of f.querySelectorAll('.field-problem')) p.remove();
  for (const el of f.querySelectorAll('[aria-invalid]')) {
    el.removeAttribute('aria-invalid');
    const ids = (el.getAttribute('aria-describedby') || '').split(' ').filter((id) => id && !id.endsWith('-problem'));
    if (ids.length) el.setAttribute('aria-describedby', ids.join(' '));
    else el.removeAttribute('aria-describedby');
  }
}

// fieldProblem shows error's message under the control of f named
// error.param (or names[error.param], for an API name that differs from the
// control's), marks it invalid and focuses it. It returns false when no
// control matches, so the caller says the message elsewhere.
export function fieldProblem(f, error, names = {}) {
  clearProblems(f);
  const param = error && error.param;
  if (!param) return false;
  const name = names[param] || param;
  const control = [...f.elements].find((el) => el.name === name);
  if (!control) return false;
  const id = (control.id || name) + '-problem';
  const note = h('p', { class: 'field-problem', id, role: 'alert' }, error.message);
  (control.closest('.field') || control).after(note);
  control.setAttribute('aria-invalid', 'true');
  const described = (control.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
  control.setAttribute('aria-describedby', [...described, id].join(' '));
  control.focus();
  return true;
}

// copyButton is a button that copies the text of source (an input or any
// element) to the clipboard; where the clipboard is refused it selects the
// text so that the person can copy it by hand.
export function copyButton(source, label = 'Copy', props = {}) {
  const b = h('button', { type: 'button', class: 'secondary small', ...props }, label);
  b.addEventListener('click', async () => {
    const text = 'value' in source ? source.value : source.textContent;
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = 'Copied';
    } catch {
      select(source);
      b.textContent = 'Selected: press Ctrl+C';
    }
  });
  return b;
}

function select(source) {
  if (typeof source.select === 'function') {
    source.focus();
    source.select();
    return;
  }
  const range = document.createRange();
  range.selectNodeContents(source);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
}
