// Get started: where the organization stands, *Load the demo* (which sends
// the demo workflow's sample requests through the gateway), then a
// walk-through to what they left behind: the runs, an answer from the exact
// cache, a policy verdict, the pattern the runs form and, after a learning
// pass, the candidate artifact learnt from it. Owners and admins load the
// demo and run the pass; any member may dismiss the guide.
import { h, clear, button } from '../lib/dom.js';
import { plural, money, time } from '../lib/format.js';
import { page, load, act, api, qs } from '../lib/ui.js';

export async function render(ctx) {
  page(ctx, 'Get started', 'See what svc does with your traffic in a minute: load the demo, then follow its requests through the console.');
  // The provider decides what the demo can show: with a real one it sends
  // only the samples (paid calls), too few for a candidate artifact.
  const [onboarding, health] = await Promise.all([
    load(ctx, '/api/v1/orgs/active/onboarding', 'The onboarding state'),
    api('GET', '/health'),
  ]);
  if (!onboarding) return;
  const provider = health.ok && health.data && health.data.provider ? health.data.provider : 'mock';
  const real = provider !== 'mock';
  const state = h('p', { id: 'onboarding-state' });
  const guide = h('section', { id: 'onboarding', class: 'panel', 'aria-labelledby': 'onboarding-title' });
  const walk = h('div', { id: 'walkthrough' });
  const dismissed = h('p', { id: 'onboarding-dismissed', class: 'quiet', hidden: true },
    'You dismissed this guide for the organization. ',
    button('Show it again', () => {
      guide.hidden = false;
      dismissed.hidden = true;
      guide.querySelector('h2').focus();
    }, { class: 'link' }));
  const redraw = async (o, runs) => {
    describe(state, o);
    await walkthrough(ctx, walk, o, runs, '', null, real ? provider : '');
  };
  const seed = ctx.session.canAct ? button('Load the demo', async () => {
    ctx.say('Loading the demo…');
    const res = await act(ctx, 'POST', '/api/v1/orgs/active/seed-demo', {}, (d) => {
      const n = d && Array.isArray(d.runs) ? d.runs.length : 0;
      return 'The demo workflow and agent are loaded' + (n ? `, and ${plural(n, 'sample request')} went through the gateway.` : '.');
    });
    if (!res.ok || !ctx.current()) return;
    await redraw(res.data.onboarding, res.data.runs || []);
    walk.querySelector('h2')?.focus();
  }, { id: 'seed-demo' }) : null;
  const dismiss = button('Dismiss', async () => {
    const res = await act(ctx, 'POST', '/api/v1/orgs/active/onboarding/dismiss', {}, 'Onboarding dismissed.');
    if (!res.ok || !ctx.current()) return;
    guide.hidden = true;
    dismissed.hidden = false;
    dismissed.querySelector('button').focus();
  }, { id: 'dismiss-onboarding', class: 'secondary' });
  clear(guide,
    h('h2', { id: 'onboarding-title', tabindex: '-1' }, 'Your organization'),
    state,
    ctx.session.canAct
      ? h('p', { id: 'seed-demo-about' }, 'The demo adds a support-triage workflow and an agent, then sends their sample requests through the gateway with the configured provider, so that runs, a cache hit, a policy verdict and a pattern appear. Loading it again adds runs, not duplicates.')
      : h('p', {}, 'An owner or admin of the organization can load the demo.'),
    real ? h('p', { id: 'demo-provider', class: 'status', dataset: { kind: 'info' } },
      `With ${provider}, the demo makes 9 calls to it; the candidate artifact needs the mock provider’s 400 made-up tickets.`) : null,
    h('div', { class: 'actions' }, seed, dismiss),
    walk);
  guide.hidden = !!onboarding.dismissed;
  dismissed.hidden = !onboarding.dismissed;
  ctx.root.append(guide, dismissed);
  await redraw(onboarding, null);
}

function describe(el, o) {
  el.textContent = `This organization has ${plural(o.workflowCount || 0, 'workflow')} and ` +
    `${plural(o.agentCount || 0, 'agent')}, and ${o.hasRuns ? 'has recorded runs' : 'no runs yet'}.`;
}

// walkthrough links to each thing the demo's requests produced. runs are
// the ids the last load made (null after a reload: the newest runs then).
// real names the provider when it is not the mock, whose made-up tickets a
// candidate artifact needs.
async function walkthrough(ctx, box, o, runs, made = '', note = null, real = '') {
  if (!o.hasRuns && !(runs && runs.length)) {
    clear(box);
    return;
  }
  const [latest, cached, blocked, patterns, artifacts] = await Promise.all([
    api('GET', '/api/v1/runs' + qs({ limit: 20 })),
    api('GET', '/api/v1/runs' + qs({ route: 'exact_cache', limit: 1 })),
    api('GET', '/api/v1/runs' + qs({ route: 'blocked', limit: 1 })),
    api('GET', '/api/v1/patterns'),
    api('GET', '/api/v1/artifacts'),
  ]);
  if (!ctx.current()) return;
  const list = latest.ok ? latest.data.runs || [] : [];
  const demo = runs && runs.length > 0;
  const ids = (demo ? runs : list.map((r) => r.id)).slice(0, SHOWN);
  const byId = new Map(list.map((r) => [r.id, r]));
  const missing = ids.filter((id) => !byId.has(id));
  for (const res of await Promise.all(missing.map((id) => api('GET', '/api/v1/runs/' + encodeURIComponent(id))))) {
    if (res.ok && res.data && res.data.run) byId.set(res.data.run.id, res.data.run);
  }
  if (!ctx.current()) return;
  const hit = cached.ok && cached.data.runs && cached.data.runs[0];
  // A verdict: a request a policy blocked or held, else one whose policy
  // check matched a rule, else any request: each has a verdict, an allow
  // when no rule matched.
  const ruled = (blocked.ok && blocked.data.runs && blocked.data.runs[0]) ||
    list.find((r) => r.routeExplanation && r.routeExplanation.policy && (r.routeExplanation.policy.rules || []).length > 0);
  const verdict = ruled || list[0];
  const pattern = patterns.ok && (patterns.data.patterns || [])[0];
  const candidate = artifacts.ok && (artifacts.data.artifacts || []).find((a) => a.state === 'shadow');
  const steps = h('ol', { class: 'steps' },
    step('Runs', demo ? `The demo sent ${plural(runs.length, 'request')} through the gateway. The first of them:` : 'The newest requests through the gateway:',
      h('ul', { id: 'demo-runs' }, ids.map((id) => h('li', {}, h('a', { href: '#/runs/' + encodeURIComponent(id) }, runLabel(id, byId.get(id)))))),
      h('a', { href: '#/runs' }, 'All runs')),
    step('The cache', hit ? 'A repeated request was answered from the exact cache, at no provider cost:' : 'No request was answered from the cache yet: send the same request twice.',
      hit ? h('a', { href: '#/runs/' + encodeURIComponent(hit.id), id: 'demo-cache-hit' }, runLabel(hit.id, hit)) : null),
    step('A policy verdict', ruled
      ? 'A policy rule decided about this request; its page says which rule matched and why:'
      : verdict ? 'Every request gets a policy verdict. No rule has matched one yet, so this one is an allow; its page shows the check:' : 'No request has been checked yet.',
      verdict ? h('a', { href: '#/runs/' + encodeURIComponent(verdict.id), id: 'demo-verdict' }, runLabel(verdict.id, verdict)) : null,
      ' ', h('a', { href: '#/policies' }, 'The policies')),
    step('A pattern', pattern ? `Similar requests form a pattern (${plural(pattern.runCount, 'run')} so far), from which svc can learn:` : 'No pattern yet: patterns form when similar requests repeat.',
      pattern ? h('a', { href: '#/patterns/' + encodeURIComponent(pattern.id), id: 'demo-pattern' }, `Pattern ${pattern.id}: ${plural(pattern.runCount, 'run')}, ${pattern.state}`) : null),
    learnStep(ctx, made || (candidate && candidate.id), note, real, (id, why) => walkthrough(ctx, box, o, runs, id, why, real)));
  clear(box, h('h2', { tabindex: '-1' }, 'Follow the demo'), steps);
}

// SHOWN is how many runs the walk-through links.
const SHOWN = 5;

function step(title, text, ...more) {
  return h('li', {}, h('h3', {}, title), h('p', {}, text, ' ', more));
}

function runLabel(id, run) {
  if (!run) return `Run ${id}`;
  return `${run.model || 'run'} · ${run.route} · ${money(run.costUsd)} · ${time(run.createdAt).textContent}`;
}

// learnStep offers a learning pass and links to the candidate artifact it
// (or an earlier pass) made: one in shadow, which is scored against live
// answers and serves nothing until it is promoted. After a pass the
// walk-through is drawn again (redraw), since the pass also finds patterns.
function learnStep(ctx, candidate, note, real, redraw) {
  const out = h('p', { id: 'learning-result', tabindex: '-1' }, candidate ? artifactLink(candidate) : note);
  const run = ctx.session.canAct ? button('Run a learning pass', async () => {
    const res = await act(ctx, 'POST', '/api/v1/learning/tick', {}, (rep) =>
      `The learning pass looked at ${plural(rep.runsScanned || 0, 'run')} and made ${plural(rep.artifactsSynthesized || 0, 'artifact')}.`);
    if (!res.ok || !ctx.current()) return;
    const made = (res.data.synthesisReports || []).find((r) => r.artifactId);
    const why = (res.data.synthesisReports || []).map((r) => r.reason).filter(Boolean);
    await redraw(made ? made.artifactId : '', real
      ? `No candidate artifact: with ${real}, the demo sent only its 9 sample requests, too few for a pattern to be learnt. The mock provider’s 400 made-up tickets make one; start svc without a provider key to see it.`
      : 'No candidate artifact yet' + (why.length ? ': ' + why[0] : '.'));
    (document.getElementById('demo-artifact') || document.getElementById('learning-result'))?.focus();
  }, { id: 'run-learning' }) : null;
  return h('li', {}, h('h3', {}, 'Learning'),
    h('p', {}, 'A learning pass turns a stable pattern into a candidate artifact. It runs in shadow beside the live answers, and serves requests only once its evidence passes the gates and it is promoted.'),
    run ? h('div', { class: 'toolbar' }, run) : null, out);
}

function artifactLink(id) {
  return h('a', { href: '#/artifacts/' + encodeURIComponent(id), id: 'demo-artifact' }, `The candidate artifact ${id}`);
}


