// An artifact: the declarative answer it is (laid out by type), where it
// came from, its Beta posterior and evidence counters, its evaluations;
// owners and admins promote, replay, quarantine or roll it back, and a gate
// that refuses says why in the API's words.
import { h, link, button, table, dl, section, append } from '../lib/dom.js';
import { num, pct, time, plural } from '../lib/format.js';
import { page, load, api, adminOnly } from '../lib/ui.js';
import { stateBadge, refusal, confirmButton, words } from '../lib/governance.js';

export async function render(ctx) {
  const id = ctx.params.id;
  page(ctx, 'Artifact ' + id);
  const d = await load(ctx, '/api/v1/artifacts/' + encodeURIComponent(id), 'The artifact');
  if (!d) return;
  const a = d.artifact;
  append(ctx.root, [
    h('p', {}, link('#/learning', '← Learning'), ' · pattern ', link('#/patterns/' + encodeURIComponent(a.patternId), a.patternId)),
    h('p', { class: 'artifact-state' }, stateBadge(a.state), ' ', words(a.type), ' · ', a.stateReason || '',
      a.promotedAt ? [' · promoted ', time(a.promotedAt)] : null,
      a.sideEffects ? [' ', h('span', { class: 'badge', dataset: { kind: 'warn' } }, 'side effects')] : null),
    adminOnly(ctx, actions(ctx, a)),
    section('What it answers', representation(a.type, a.representation),
      h('details', { class: 'raw' }, h('summary', {}, 'The representation as stored (JSON)'),
        h('pre', { class: 'code' }, JSON.stringify(a.representation, null, 2)))),
    section('Confidence', confidence(a)),
    section('Provenance', provenance(a.provenance || {})),
    section('Evaluations', evaluations((d.evaluations || []).slice(0, 50)),
      (d.evaluations || []).length > 50 ? h('p', { class: 'quiet' }, `The newest 50 of ${num(d.evaluations.length)} shown.`) : null)]);
}

// actions are the operator's buttons; a refusal (a gate, a confirmation
// the API wants) is shown in its words under them.
function actions(ctx, a) {
  const result = h('div', { class: 'action-result' });
  const id = encodeURIComponent(a.id);
  const confirm = h('input', { type: 'checkbox', name: 'confirm' });
  const act = async (path, body, done) => {
    result.replaceChildren();
    const res = await api('POST', `/api/v1/artifacts/${id}/${path}`, body);
    if (!ctx.current()) return null;
    if (!res.ok) {
      ctx.say(res.error.message, 'error');
      result.append(refusal(res.error, explain(path, res.error)));
      return null;
    }
    ctx.say(done(res.data), 'ok');
    return res.data;
  };
  const live = a.state === 'shadow' || a.state === 'promoted';
  return section('Actions', h('div', { class: 'toolbar' },
    a.state !== 'promoted' && a.state !== 'retired' ? button('Promote', async () => {
      const data = await act('promote', a.sideEffects ? { confirm: confirm.checked } : undefined,
        (d) => `Promoted ${d.artifact.id}: it serves its pattern now.`);
      if (data) await render(ctx);
    }, { class: 'promote' }) : null,
    a.sideEffects && a.state !== 'promoted' ? h('label', { class: 'check' }, confirm, ' Its tools have side effects: I confirm the promotion') : null,
    button('Replay on the holdout runs', async () => {
      const data = await act('replay', undefined, (d) => `Replayed: ${d.passed} passed, ${d.failed} failed, ${d.abstained} abstained.`);
      if (data) {
        await render(ctx);
        if (ctx.current()) ctx.root.querySelector('.evaluations-table')?.scrollIntoView({ block: 'start' });
      }
    }, { class: 'replay secondary' }),
    live ? confirmButton('Quarantine', 'Quarantine it? It stops answering until promoted again.', async () => {
      if (await act('quarantine', undefined, (d) => `Quarantined ${d.artifact.id}.`)) await render(ctx);
    }, { danger: true }) : null,
    a.state !== 'retired' ? confirmButton('Roll back', 'Retire it for good? A new one must be synthesized.', async () => {
      if (await act('rollback', undefined, (d) => `Rolled back ${d.artifact.id}: it is retired.`)) await render(ctx);
    }, { danger: true }) : null), result);
}

// explain names which step refused, before the API's own words.
function explain(path, error) {
  if (path === 'promote' && error.code === 'gate_failed') return 'The promotion gate refused: ';
  if (path === 'promote' && error.code === 'confirmation_required') return 'Promotion needs your confirmation: ';
  return `The ${path} was refused: `;
}

// representation lays out what the artifact answers, by type.
function representation(type, rep) {
  const r = rep && typeof rep === 'object' ? rep : {};
  switch (type) {
    case 'template':
      return h('div', { class: 'rep template' },
        h('p', {}, 'A fixed answer; the parts in boxes are filled from the request.'),
        h('p', { class: 'template-text' }, templateParts(String(r.text || ''))),
        dl([['Slots', (r.slots || []).length ? r.slots.join(', ') : 'none']]));
    case 'extractor':
      return h('div', { class: 'rep extractor' },
        h('p', {}, 'A JSON object built field by field:'),
        table([
          { label: 'Field', cell: (f) => h('code', {}, f.name) },
          { label: 'Value', cell: (f) => (f.slot ? ['from the request\'s ', h('mark', { class: 'slot' }, f.slot)]
            : ['always ', h('code', {}, JSON.stringify(f.const))]) },
        ], r.fields || [], 'No field.'));
    case 'lookup': {
      const entries = Object.entries(r.entries || {});
      return h('div', { class: 'rep lookup' },
        h('p', {}, `Answers ${plural(entries.length, 'input')} seen before, and abstains on any other.`),
        table([
          { label: 'Input', cell: ([k]) => k },
          { label: 'Answer', cell: ([, v]) => v },
        ], entries.slice(0, 50)),
        entries.length > 50 ? h('p', { class: 'quiet' }, `The first 50 of ${num(entries.length)}.`) : null);
    }
    case 'classifier':
      return classifier(r);
  }
  return h('p', { class: 'quiet' }, `An artifact of type ${type}; its representation is below as stored.`);
}

// templateParts splits a template's text into text and {{slot}} marks.
function templateParts(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(/\{\{([^}]+)\}\}/g)) {
    out.push(text.slice(last, m.index), h('mark', { class: 'slot' }, m[1]));
    last = m.index + m[0].length;
  }
  out.push(text.slice(last));
  return out;
}

// classifier shows a classifier's labels with their prior share, the words
// that speak most for each, and when it abstains.
function classifier(r) {
  const labels = r.labels || [];
  const priors = (r.logPrior || []).map((x) => Math.exp(x));
  const weights = Object.entries(r.weights || {});
  const top = labels.map((_, i) => weights
    .map(([token, w]) => [token, w[i] - Math.max(...w.filter((_, j) => j !== i))])
    .sort((x, y) => y[1] - x[1]).slice(0, 8).map(([token]) => token));
  return h('div', { class: 'rep classifier' },
    h('p', {}, `Chooses one of ${plural(labels.length, 'label')} from the words of the request (naive Bayes over ${plural(weights.length, 'word')}); `,
      `it abstains, and the call goes to the model, when the best label leads the next by less than ${num(r.margin)} in log-odds`,
      r.minKnown ? ` or fewer than ${pct(r.minKnown)} of the request's words are known to it` : '', '.'),
    table([
      { label: 'Label', cell: (row) => h('strong', {}, row.label) },
      { label: 'Share in training', class: 'num', cell: (row) => pct(row.prior) },
      { label: 'Words that speak for it', cell: (row) => h('span', { class: 'tokens' }, row.top.map((t) => h('code', {}, t))) },
    ], labels.map((label, i) => ({ label, prior: priors[i], top: top[i] }))));
}

// confidence is the Beta posterior over the artifact's agreement and the
// counters it comes from.
function confidence(a) {
  const meter = h('div', { class: 'confidence-bar', role: 'img',
    'aria-label': `confidence ${pct(a.confidence)}, lower bound ${pct(a.lowerBound)}` },
  h('span', { class: 'lower' }), h('span', { class: 'mean' }));
  meter.querySelector('.lower').style.width = Math.max(0, Math.min(100, a.lowerBound * 100)) + '%';
  meter.querySelector('.mean').style.left = Math.max(0, Math.min(100, a.confidence * 100)) + '%';
  return h('div', {},
    dl([
      ['Posterior', `Beta(α ${num(a.alpha)}, β ${num(a.beta)})`],
      ['Confidence (mean)', pct(a.confidence)],
      ['Lower bound', pct(a.lowerBound)],
    ]), meter,
    table([
      { label: 'Evidence', cell: (r) => r.kind },
      { label: 'Passed', class: 'num', cell: (r) => num(r.pass) },
      { label: 'Failed', class: 'num', cell: (r) => num(r.fail) },
    ], [
      { kind: 'Replay on recorded runs', pass: a.replayPass, fail: a.replayFail },
      { kind: 'Shadow, beside live calls', pass: a.shadowPass, fail: a.shadowFail },
      { kind: 'Live, from feedback', pass: a.livePass, fail: a.liveFail },
    ]),
    h('p', { class: 'quiet' }, `It abstained ${plural(a.abstentions, 'time')}; an abstention counts neither way.`));
}

function runLinks(ids) {
  if (!ids || ids.length === 0) return 'none';
  const shown = ids.slice(0, 5).map((id, i) => [i ? ', ' : '', link('#/runs/' + encodeURIComponent(id), id)]);
  return [`${plural(ids.length, 'run')}: `, shown, ids.length > 5 ? ', …' : ''];
}

function provenance(p) {
  return dl([
    ['Source', p.source || null],
    ['Pattern key', p.patternKey ? h('code', {}, p.patternKey) : null],
    ['Learnt from', runLinks(p.sourceRunIds)],
    ['Held out', runLinks(p.holdoutRunIds)],
    ['Split', p.split ? `${pct(p.holdoutShare)} held out, by ${p.split}` : null],
    ['Holdout replay at synthesis', `agreed ${num(p.holdoutAgreed)} of ${num(p.holdoutAnswered)} answered, abstained ${num(p.holdoutAbstained)}`],
  ]);
}

function evaluations(list) {
  const t = table([
    { label: 'When', cell: (e) => time(e.createdAt) },
    { label: 'Kind', cell: (e) => e.kind },
    { label: 'Outcome', cell: (e) => stateBadgeOutcome(e.outcome) },
    { label: 'Run', cell: (e) => link('#/runs/' + encodeURIComponent(e.runId), e.runId) },
    { label: 'Expected', cell: (e) => h('span', { class: 'answer' }, e.expected) },
    { label: 'It answered', cell: (e) => h('span', { class: 'answer' }, e.got || '–') },
    { label: 'Why', cell: (e) => e.reason || '' },
  ], list, 'No evaluation yet.');
  t.classList.add('evaluations-table');
  return t;
}

function stateBadgeOutcome(outcome) {
  const kind = outcome === 'pass' ? 'ok' : outcome === 'fail' ? 'bad' : 'warn';
  return h('span', { class: 'badge', dataset: { kind } }, outcome === 'abstain' ? 'abstained' : outcome);
}
