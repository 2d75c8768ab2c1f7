// Overview: what the gateway did and saved, and what waits for a person.
import { h } from '../lib/dom.js';
import { money, num } from '../lib/format.js';
import { page, load } from '../lib/ui.js';

export async function render(ctx) {
  page(ctx, 'Overview', 'What the gateway did, what it saved, and what waits for you.');
  const savings = await load(ctx, '/api/v1/savings', 'The savings summary');
  if (!savings) return;
  ctx.root.append(h('div', { class: 'cards' },
    h('div', { class: 'card' }, h('span', { class: 'value' }, num(savings.runs)), h('span', { class: 'label' }, 'runs')),
    h('div', { class: 'card' }, h('span', { class: 'value' }, money(savings.saved)), h('span', { class: 'label' }, 'saved'))));
}
