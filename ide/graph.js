// graph.js — the plan as a dependency graph: SVG nodes placed by layout.js, arrows from
// each dependency to its dependent, pan (drag), zoom (wheel, buttons, keys), fit.
// The first render is one layout and one SVG build. A `task` event changes one node in
// place (its state, text and the edges leaving it); only a change of the plan's shape
// (tasks added or removed, dependencies changed) lays it out again, keeping the view.
//
// This module lays the plan out and keeps the drawing in step with the store; the
// sections are in graph/: render.js (the canvas, edges and nodes), view.js (pan, zoom,
// fit) and find.js (the find box and the state counts' matches). They share `graph`,
// the state of one mounted graph.

import { h, clear } from './dom.js';
import { t } from './i18n.js';
import { layout } from './layout.js';
import { canvas, drawEdges, buildNode, fill, listenToNodes } from './graph/render.js';
import { tools, fit, size, reveal, listen } from './graph/view.js';
import { finder, focusState, applyMatches } from './graph/find.js';

// What decides the layout: ids in order and their dependencies. States do not.
function shapeOf(rows) {
  return rows.map((r) => `${r.id}<${(r.dependencies || []).join(',')}`).join('|');
}

export function mountGraph(root, ctx) {
  const { store, openTask } = ctx;
  const graph = {
    store,
    openTask,
    result: null, // layout.js's answer for the plan drawn
    shape: null,
    view: { x: 0, y: 0, k: 1 },
    touched: false, // the user panned or zoomed: relayouts keep their view
    nodes: new Map(), // id -> {g, parts}
    edgesFrom: new Map(), // id -> [path]
    edgesTo: new Map(),
    countdown: null,
  };
  const svgCanvas = canvas(graph);
  const find = finder(graph);
  const hint = h('div', { class: 'graph-hint' }, t('graph.hint'));
  graph.wrap = h('div', { class: 'graph-wrap' }, svgCanvas, find, tools(graph), hint);
  root.appendChild(graph.wrap);
  listen(graph);
  listenToNodes(graph);

  const selected = () => markSelected(graph);
  const onTasks = () => {
    if (shapeOf(store.rows()) !== graph.shape) {
      build(graph);
      if (!graph.touched) fit(graph, false);
    } else {
      const now = Date.now();
      for (const r of store.rows()) if (graph.nodes.has(r.id)) fill(graph, graph.nodes.get(r.id), r, now);
      ensureCountdown(graph);
    }
  };
  const onTask = (id) => {
    const row = store.tasks.get(id);
    const parts = graph.nodes.get(id);
    if (row && parts) fill(graph, parts, row, Date.now());
    ensureCountdown(graph);
  };

  // The canvas is measured while it is still empty (a cheap layout of the shell), and the
  // view set before the nodes go in: the first paint then lays out the 200 nodes once,
  // instead of once for the measurement and again for the new transform.
  const empty = size(graph);
  build(graph, empty);
  const offs = [store.on('tasks', onTasks), store.on('task', onTask), store.on('focus-state', (s) => focusState(graph, s))];
  window.addEventListener('hashchange', selected);
  // The canvas has its size only once it is in the document and laid out.
  const resize = new ResizeObserver(() => {
    if (!graph.touched) fit(graph, false);
  });
  resize.observe(svgCanvas);

  return () => {
    offs.forEach((off) => off());
    window.removeEventListener('hashchange', selected);
    resize.disconnect();
    if (graph.countdown) clearInterval(graph.countdown);
  };
}

// Lays the plan out and draws it anew; `measured` (the canvas's size) sets the first view.
function build(graph, measured) {
  const { store, nodes, edgesFrom, edgesTo, edgeLayer, nodeLayer } = graph;
  const rows = store.rows();
  graph.shape = shapeOf(rows);
  const result = layout(rows);
  graph.result = result;
  clear(edgeLayer);
  clear(nodeLayer);
  nodes.clear();
  edgesFrom.clear();
  edgesTo.clear();
  drawEdges(graph, result);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const frag = document.createDocumentFragment();
  for (const at of result.nodes) frag.appendChild(buildNode(graph, at, byId.get(at.id)));
  if (measured) fit(graph, false, measured);
  nodeLayer.appendChild(frag);
  applyMatches(graph);
  markSelected(graph);
  ensureCountdown(graph);
}

// The open task is outlined, and brought on screen when it was opened from elsewhere
// (the backlog, the chat, a dependency in the panel).
function markSelected(graph) {
  const m = /^#\/task\/(.+)$/.exec(location.hash);
  const selected = m ? decodeURIComponent(m[1]) : null;
  for (const [id, parts] of graph.nodes) parts.g.classList.toggle('selected', id === selected);
  if (selected && graph.nodes.has(selected)) reveal(graph, selected);
}

// A RETRY_WAIT node counts down each second; the timer runs only while one is shown.
function ensureCountdown(graph) {
  const { store, nodes } = graph;
  const waiting = [...store.tasks.values()].some((r) => r.state === 'RETRY_WAIT' && r.next_retry_at_ms);
  if (waiting && !graph.countdown) {
    graph.countdown = setInterval(() => {
      const now = Date.now();
      for (const r of store.tasks.values()) {
        if (r.state === 'RETRY_WAIT' && nodes.has(r.id)) fill(graph, nodes.get(r.id), r, now);
      }
    }, 1000);
  } else if (!waiting && graph.countdown) {
    clearInterval(graph.countdown);
    graph.countdown = null;
  }
}
