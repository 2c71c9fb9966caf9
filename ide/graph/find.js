// graph/find.js — finding tasks in the graph: the find box (by id or title; Enter goes
// to the next match, Shift+Enter back, Esc clears) and the state counts of the plan's
// summary (a state's tasks are the matches, asked again goes to the next). Matching
// nodes stay bright, the rest dim; the current one is centred. Its state is
// graph.matches, graph.matchAt and graph.stateFocus.

import { h, icon } from '../dom.js';
import { t } from '../i18n.js';
import { centre } from './view.js';

/** The find box, with its count of matches and its clear button. */
export function finder(graph) {
  const findCount = h('span', { class: 'graph-find-count', 'aria-live': 'polite' });
  const findInput = h('input', {
    type: 'search',
    class: 'graph-find-input',
    'data-test': 'graph-search',
    placeholder: t('graph.find'),
    'aria-label': t('graph.findHint'),
    title: t('graph.findHint'),
    on: {
      input: () => {
        graph.stateFocus = null;
        find(graph, findInput.value);
      },
      keydown: (e) => {
        if (e.key === 'Enter') {
          e.preventDefault();
          step(graph, e.shiftKey ? -1 : 1);
        } else if (e.key === 'Escape' && graph.wrap.classList.contains('finding')) {
          e.stopPropagation();
          clearFind(graph);
        }
      },
    },
  });
  const clearButton = h(
    'button',
    { type: 'button', class: 'icon-btn graph-find-clear', 'aria-label': t('graph.clearFind'), title: t('graph.clearFind'), on: { click: () => clearFind(graph) } },
    icon('close'),
  );
  Object.assign(graph, { findInput, findCount, matches: [], matchAt: -1, stateFocus: null });
  return h('div', { class: 'graph-find', role: 'search' }, findInput, findCount, clearButton);
}

function find(graph, query) {
  applyFind(graph, query);
  if (graph.matches.length) step(graph, 1);
}

function clearFind(graph) {
  graph.stateFocus = null;
  graph.findInput.value = '';
  applyFind(graph, '');
  for (const parts of graph.nodes.values()) parts.g.classList.remove('current');
}

// The plan's summary asked for a state: its tasks light up, and asking again goes to
// the next one (the way to walk the failures of a large plan).
export function focusState(graph, state) {
  if (graph.stateFocus === state && graph.matches.length) {
    step(graph, 1);
    return;
  }
  graph.stateFocus = state;
  graph.findInput.value = '';
  applyState(graph);
  if (graph.matches.length) step(graph, 1);
}

// Marks the matches again after a relayout, without moving the view.
export function applyMatches(graph) {
  if (graph.stateFocus) applyState(graph);
  else if (graph.findInput.value) applyFind(graph, graph.findInput.value);
}

function applyState(graph) {
  const { nodes, store, stateFocus } = graph;
  const matches = [];
  for (const [id, parts] of nodes) {
    const hit = store.tasks.get(id)?.state === stateFocus;
    parts.g.classList.toggle('match', hit);
    if (hit) matches.push(id);
  }
  graph.matches = matches;
  graph.matchAt = -1;
  graph.wrap.classList.add('finding');
  graph.findCount.textContent = matches.length ? '' : t('graph.noMatch');
}

function applyFind(graph, query) {
  const { nodes, store } = graph;
  const q = query.trim().toLowerCase();
  const matches = [];
  for (const [id, parts] of nodes) {
    const row = store.tasks.get(id);
    const hit = Boolean(q) && (id.toLowerCase().includes(q) || String(row?.title || '').toLowerCase().includes(q));
    parts.g.classList.toggle('match', hit);
    if (hit) matches.push(id);
  }
  graph.matches = matches;
  graph.matchAt = -1;
  graph.wrap.classList.toggle('finding', Boolean(q));
  graph.findCount.textContent = q && !matches.length ? t('graph.noMatch') : '';
}

function step(graph, dir) {
  const { matches, stateFocus } = graph;
  if (!matches.length) return;
  graph.matchAt = (graph.matchAt + dir + matches.length) % matches.length;
  const id = matches[graph.matchAt];
  graph.findCount.textContent = stateFocus
    ? t('graph.stateMatches', { state: t(`state.${stateFocus}`), n: graph.matchAt + 1, total: matches.length })
    : t('graph.matches', { n: graph.matchAt + 1, total: matches.length });
  centre(graph, id);
  for (const [nid, parts] of graph.nodes) parts.g.classList.toggle('current', nid === id);
}
