// Approvals: requests a policy held for a person, what each asked and the
// rule that held it; owners and admins approve or deny with a reason. An
// approval grants an exception: the identical request from the same caller
// passes until it ends.
import { h, link, button, field, dl } from '../lib/dom.js';
import { time, when, plural } from '../lib/format.js';
import { page, load, api, qs } from '../lib/ui.js';
import { stateBadge, heldRequest, refusal, words } from '../lib/governance.js';

// The tabs. The API knows pending, approved and rejected; an approved
// request whose exception has ended is shown apart as expired.
const TABS = [
  { id: 'pending', label: 'Pending', status: 'pending' },
  { id: 'approved', label: 'Approved', status: 'approved', keep: (a) => !ended(a) },
  { id: 'expired', label: 'Expired', status: 'approved', keep: (a) => ended(a) },
  { id: 'rejected', label: 'Rejected', status: 'rejected' },
  { id: 'all', label: 'All', status: '' },
];

// targetName says what kind of request was held.
function targetName(target) {
  return { chat: 'Chat request', tool: 'Tool call', web: 'Web action' }[target] || words(target);
}

function ended(a) {
  return a.status === 'approved' && a.expiresAt && Date.parse(a.expiresAt) <= Date.now();
}

// LIMIT is how many approvals one read asks for; the API does not count
// the rest, so a full page is "the newest LIMIT".
const LIMIT = 200;

export async function render(ctx) {
  const tab = TABS.find((t) => t.id === ctx.query.get('status')) || TABS[0];
  const focusID = ctx.query.get('id') || '';
  page(ctx, 'Approvals', 'Requests a policy held for a person to decide. ',
    ctx.session.canAct ? 'Approve or deny each with a reason; an approval lets the identical request through for a while.'
      : 'Owners and admins decide them.');
  ctx.root.append(h('nav', { class: 'tabs', 'aria-label': 'Approvals by status' },
    h('ul', {}, TABS.map((t) => h('li', {}, link('#/approvals' + qs({ status: t.id === 'pending' ? '' : t.id }), t.label,
      t === tab ? { 'aria-current': 'page' } : {}))))));
  const data = await load(ctx, '/api/v1/approvals' + qs({ status: tab.status, limit: LIMIT }), 'The approvals');
  if (!data) return;
  const full = (data.approvals || []).length >= LIMIT;
  const list = (data.approvals || []).filter((a) => !tab.keep || tab.keep(a));
  const title = h('h2', { id: 'queue-title', tabindex: '-1' });
  let count = list.length;
  const drawTitle = () => {
    title.textContent = full ? `${tab.label}: the newest ${plural(count, 'request')}` : `${tab.label}: ${plural(count, 'request')}`;
  };
  drawTitle();
  const holder = h('section', { class: 'approvals', 'aria-labelledby': 'queue-title' }, title);
  ctx.root.append(holder);
  if (list.length === 0) {
    holder.append(h('p', { class: 'empty' }, tab.id === 'pending' ? 'Nothing waits for a decision.' : 'None.'));
    return;
  }
  // A decision redraws only its own card, so reasons typed in the others stay.
  const decided = (old, a) => {
    const fresh = card(ctx, a, decided);
    old.replaceWith(fresh);
    if (tab.id === 'pending') {
      count--;
      drawTitle();
    }
    fresh.setAttribute('tabindex', '-1');
    fresh.focus();
  };
  for (const a of list) holder.append(card(ctx, a, decided));
  if (focusID) {
    const el = holder.querySelector(`[data-id="${CSS.escape(focusID)}"]`);
    if (el) {
      el.classList.add('focused');
      el.setAttribute('tabindex', '-1');
      el.focus({ preventScroll: true });
      el.scrollIntoView({ block: 'start' });
    }
  }
}

// card is one approval: what it asked, who asked, the rules that held it,
// and its decision or the form to make one; decided(card, approval) puts
// the decided approval in its place.
function card(ctx, a, decided) {
  const status = ended(a) ? 'expired' : a.status;
  const by = a.requestedBy || {};
  const el = h('article', { class: 'approval', dataset: { id: a.id, status } },
    h('header', {},
      h('h3', {}, targetName(a.target), ' ', h('code', {}, a.id)), ' ', stateBadge(status)),
    dl([
      ['Asked', time(a.createdAt)],
      ['By', [by.actor, by.app && `app ${by.app}`, by.agent && `agent ${by.agent}`, by.subject && `subject ${by.subject}`]
        .filter(Boolean).join(' · ') || null],
      ['Run', a.runId ? link('#/runs/' + encodeURIComponent(a.runId), a.runId) : null],
    ]),
    h('div', { class: 'held-by' }, h('p', { class: 'sub' }, 'Held by'),
      h('ul', { class: 'rules' }, (a.rules || []).map((r) => h('li', {},
        link('#/policies/' + encodeURIComponent(r.id), r.id, { class: 'rule-link' }),
        r.reason ? h('span', { class: 'reason' }, ': ' + r.reason) : null)))),
    h('details', { class: 'asked', open: a.status === 'pending' },
      h('summary', {}, 'What it asked'), heldRequest(a.target, a.request)),
    a.status === 'pending' ? decision(ctx, a, (d) => decided(el, d)) : outcome(a));
  return el;
}

// outcome is a decided approval's decision and, when approved, the
// exception it grants.
function outcome(a) {
  const parts = [dl([
    ['Decision', `${words(a.status)} by ${a.decidedBy || 'someone'}`],
    ['When', a.decidedAt ? time(a.decidedAt) : null],
    ['Reason', a.reason || null],
  ])];
  if (a.status === 'approved' && a.expiresAt) {
    const over = ended(a);
    parts.push(h('p', { class: 'exception', dataset: { ended: over ? 'yes' : 'no' } },
      over ? 'The exception it granted ended ' : 'Exception in force: the identical request from the same caller passes until ',
      h('time', { datetime: a.expiresAt }, when(a.expiresAt)), ' (', time(a.expiresAt), ').'));
  }
  return h('div', { class: 'outcome' }, parts);
}

// decision is the form to approve or deny a pending approval, for owners
// and admins; a member reads that it waits.
function decision(ctx, a, done) {
  if (!ctx.session.canAct) return h('p', { class: 'quiet waiting' }, 'Waiting for an owner or admin to decide.');
  const reason = h('textarea', { name: 'reason', rows: '2', required: true, maxlength: '2000', class: 'reason-input' });
  const problemBox = h('div', { class: 'decision-problem' });
  const decide = (approve) => async () => {
    problemBox.replaceChildren();
    const res = await api('POST', `/api/v1/approvals/${encodeURIComponent(a.id)}/${approve ? 'approve' : 'reject'}`,
      { reason: reason.value });
    if (!ctx.current()) return;
    if (!res.ok) {
      problemBox.append(refusal(res.error));
      ctx.say(res.error.message, 'error');
      reason.focus();
      return;
    }
    const d = res.data.approval;
    ctx.say(approve ? `Approved ${d.id}: the identical request passes until ${when(d.expiresAt)}.` : `Denied ${d.id}.`, 'ok');
    done(d);
  };
  return h('div', { class: 'decide' },
    field('Reason for the decision', reason, 'Recorded with the decision and in the audit log.'),
    problemBox,
    h('div', { class: 'toolbar' },
      button('Approve', decide(true), { class: 'approve' }),
      button('Deny', decide(false), { class: 'danger deny' })));
}
