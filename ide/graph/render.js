// graph/render.js — the graph's drawing: the SVG canvas with its arrow markers, the
// edges, and each node (a box with its id, pool, title and a status line: the reason of
// a blocked or failed task, a retry's countdown, else its state and attempts), written
// again in place when its task changes; an edge lights up with a node it touches. One
// set of listeners on the node layer opens, reveals and highlights every node.

import { t, formatDuration } from '../i18n.js';
import { edgePath, fitText, DEFAULTS } from '../layout.js';
import { svg, clear } from '../dom.js';
import { reveal } from './view.js';

const W = DEFAULTS.nodeWidth;
const H = DEFAULTS.nodeHeight;
const PAD = 14;

// SVG text does not ellipsize. Labels are cut to the node's width as measured on a 2D
// canvas in the page's font (no layout per node); layout.js's estimate is the fallback.
let family = null;
const measurers = new Map(); // font -> 2D context (setting ctx.font is costly; keep one per font)
function fitLabel(text, px, weight, size) {
  const s = String(text ?? '');
  const font = `${weight} ${size}px`;
  let c = measurers.get(font);
  if (c === undefined) {
    family = family || getComputedStyle(document.body).fontFamily;
    c = document.createElement('canvas').getContext('2d');
    if (c) c.font = `${font} ${family}`;
    measurers.set(font, c);
  }
  if (!c) return fitText(s, Math.floor(px / (size * 0.55)));
  const full = c.measureText(s).width;
  if (full <= px) return s;
  // Start from the proportional estimate and walk: two or three measurements, no search.
  let n = Math.min(s.length - 1, Math.floor((px / full) * s.length));
  while (n > 0 && c.measureText(`${s.slice(0, n).trimEnd()}…`).width > px) n--;
  while (n + 1 < s.length && c.measureText(`${s.slice(0, n + 1).trimEnd()}…`).width <= px) n++;
  return `${s.slice(0, n).trimEnd()}…`;
}

// The third line of a node: the reason for a blocked or failed task, a countdown while
// it waits to retry, else its state and attempts.
function statusLine(row, now) {
  const state = row.state || 'PENDING';
  if (row.stopping && state === 'RUNNING') return { text: t('graph.stopping') };
  if ((state === 'BLOCKED' || state === 'FAILED') && row.reason) {
    return { text: row.reason, reason: true };
  }
  if (state === 'RETRY_WAIT' && row.next_retry_at_ms) {
    const left = row.next_retry_at_ms - now;
    return {
      text: left > 0 ? t('graph.retryIn', { time: formatDuration(left) }) : t('graph.retryNow'),
      countdown: true,
    };
  }
  const label = t(`state.${state}`);
  if (state === 'RUNNING' && row.attempts) return { text: `${label} · ${t('graph.attempt', { n: row.attempts })}` };
  if (row.attempts) return { text: `${label} · ${t(row.attempts === 1 ? 'graph.attempts1' : 'graph.attempts', { n: row.attempts })}` };
  return { text: label };
}

/** The SVG canvas: arrow markers, then the viewport with the edge and node layers. */
export function canvas(graph) {
  const viewport = svg('g', { class: 'viewport' });
  const edgeLayer = svg('g', { class: 'edges' });
  const nodeLayer = svg('g', { class: 'nodes' });
  viewport.append(edgeLayer, nodeLayer);
  const canvas = svg(
    'svg',
    {
      'data-test': 'graph',
      class: 'graph-canvas',
      role: 'group',
      'aria-label': t('graph.label'),
      tabindex: '-1',
    },
    svg(
      'defs',
      {},
      ...['plain', 'done', 'hot'].map((kind) =>
        svg(
          'marker',
          {
            id: `arrow-${kind}`,
            class: `arrow arrow-${kind}`,
            viewBox: '0 0 10 10',
            refX: '9',
            refY: '5',
            markerWidth: '7',
            markerHeight: '7',
            orient: 'auto-start-reverse',
          },
          svg('path', { d: 'M0,1 L10,5 L0,9 z' }),
        ),
      ),
    ),
    viewport,
  );
  Object.assign(graph, { viewport, edgeLayer, nodeLayer, canvas });
  return canvas;
}

/** The edges of `result` (layout.js's), in the colour of the task they leave. */
export function drawEdges(graph, result) {
  const { store, edgeLayer, edgesFrom, edgesTo } = graph;
  for (const e of result.edges) {
    const from = store.tasks.get(e.from);
    const done = from && from.state === 'SUCCEEDED';
    const path = svg('path', {
      'data-test': 'graph-edge',
      'data-from': e.from,
      'data-to': e.to,
      class: done ? 'edge done' : 'edge',
      d: edgePath(e.points),
      'marker-end': done ? 'url(#arrow-done)' : 'url(#arrow-plain)',
    });
    edgeLayer.appendChild(path);
    if (!edgesFrom.has(e.from)) edgesFrom.set(e.from, []);
    edgesFrom.get(e.from).push(path);
    if (!edgesTo.has(e.to)) edgesTo.set(e.to, []);
    edgesTo.get(e.to).push(path);
  }
}

/** A node of task `row` at `at` (its place in the layout), filled. */
export function buildNode(graph, at, row) {
  const g = svg('g', {
    'data-test': 'graph-node',
    'data-task': row.id,
    class: 'node',
    transform: `translate(${at.x},${at.y})`,
    tabindex: '0',
    role: 'button',
  });
  const tip = svg('title');
  const halo = svg('rect', { class: 'node-halo', x: -4, y: -4, width: W + 8, height: H + 8, rx: 12 });
  const shadow = svg('rect', { class: 'node-shadow', y: 1.5, width: W, height: H, rx: 9 });
  const box = svg('rect', { class: 'node-box', width: W, height: H, rx: 9 });
  const stripe = svg('rect', { class: 'node-stripe', x: 0, y: 0, width: 5, height: H, rx: 2.5 });
  const dot = svg('circle', { class: 'node-dot', cx: PAD + 4, cy: 19, r: 4.5 });
  const idText = svg('text', { class: 'node-id', x: PAD + 14, y: 23 });
  const pool = svg('text', { class: 'node-pool', x: W - PAD + 2, y: 23, 'text-anchor': 'end' });
  const title = svg('text', { class: 'node-title', x: PAD, y: 44 });
  const line = svg('g', { class: 'node-line' });
  g.append(tip, halo, shadow, box, stripe, dot, idText, pool, title, line);
  const parts = { g, tip, idText, pool, title, line, key: '' };
  graph.nodes.set(row.id, parts);
  fill(graph, parts, row, Date.now());
  return g;
}

// Writes a node's state and text; skipped when nothing it shows changed.
export function fill(graph, parts, row, now) {
  const state = row.state || 'PENDING';
  const status = statusLine(row, now);
  const key = [state, row.title, row.pool, status.text, status.reason].join('\u0001');
  if (key === parts.key) return;
  parts.key = key;
  const { g } = parts;
  g.setAttribute('data-state', state);
  g.classList.toggle('has-reason', Boolean(status.reason));
  g.classList.toggle('stopping', Boolean(row.stopping));
  const stateLabel = t(`state.${state}`);
  g.setAttribute('aria-label', t('graph.node', { id: row.id, title: row.title, state: status.reason ? `${stateLabel}: ${status.text}` : status.text }));
  parts.tip.textContent = [row.title, `${row.id} · ${stateLabel}`, status.reason ? status.text : ''].filter(Boolean).join('\n');
  // Ids are set in a monospace font: 0.6 em a character.
  parts.idText.textContent = fitText(row.id, Math.floor((W - 2 * PAD - 14 - (row.pool && row.pool !== 'default' ? 64 : 0)) / (11.5 * 0.6)));
  parts.pool.textContent = row.pool && row.pool !== 'default' ? fitLabel(row.pool, 60, 400, 11) : '';
  parts.title.textContent = fitLabel(row.title, W - 2 * PAD, 600, 13.5);
  clear(parts.line);
  if (status.reason) {
    parts.line.appendChild(
      svg(
        'g',
        { 'data-test': 'node-reason', class: 'node-reason' },
        svg('title', {}, status.text),
        svg('text', { x: PAD, y: 64 }, fitLabel(status.text, W - 2 * PAD, 500, 12)),
      ),
    );
  } else {
    parts.line.appendChild(svg('text', { class: 'node-status', x: PAD, y: 64 }, fitLabel(status.text, W - 2 * PAD, 400, 12)));
  }
  for (const p of graph.edgesFrom.get(row.id) || []) {
    p.classList.toggle('done', state === 'SUCCEEDED');
    if (!p.classList.contains('hot')) p.setAttribute('marker-end', markerOf(p));
  }
}

export function highlight(graph, id, on) {
  const { edgesFrom, edgesTo } = graph;
  for (const p of edgesFrom.get(id) || []) p.classList.toggle('hot', on);
  for (const p of edgesTo.get(id) || []) p.classList.toggle('hot', on);
  for (const p of [...(edgesFrom.get(id) || []), ...(edgesTo.get(id) || [])]) {
    p.setAttribute('marker-end', on ? 'url(#arrow-hot)' : markerOf(p));
  }
}

function markerOf(path) {
  return path.classList.contains('done') ? 'url(#arrow-done)' : 'url(#arrow-plain)';
}

/** Opens a node on a click, Enter or Space; reveals and highlights it on focus or hover. */
export function listenToNodes(graph) {
  const { nodeLayer, openTask } = graph;
  // One set of listeners on the node layer for every node (not seven per node).
  const nodeOf = (e) => {
    const g = e.target.closest && e.target.closest('[data-test=graph-node]');
    return g && nodeLayer.contains(g) ? g : null;
  };
  nodeLayer.addEventListener('click', (e) => {
    const g = nodeOf(e);
    if (g) openTask(g.getAttribute('data-task'));
  });
  nodeLayer.addEventListener('keydown', (e) => {
    const g = nodeOf(e);
    if (g && (e.key === 'Enter' || e.key === ' ')) {
      e.preventDefault();
      openTask(g.getAttribute('data-task'));
    }
  });
  nodeLayer.addEventListener('focusin', (e) => {
    const g = nodeOf(e);
    if (!g) return;
    reveal(graph, g.getAttribute('data-task'));
    highlight(graph, g.getAttribute('data-task'), true);
  });
  nodeLayer.addEventListener('focusout', (e) => {
    const g = nodeOf(e);
    if (g) highlight(graph, g.getAttribute('data-task'), false);
  });
  nodeLayer.addEventListener('pointerover', (e) => {
    const g = nodeOf(e);
    if (g && !(e.relatedTarget && g.contains(e.relatedTarget))) highlight(graph, g.getAttribute('data-task'), true);
  });
  nodeLayer.addEventListener('pointerout', (e) => {
    const g = nodeOf(e);
    if (g && !(e.relatedTarget && g.contains(e.relatedTarget)) && document.activeElement !== g) {
      highlight(graph, g.getAttribute('data-task'), false);
    }
  });
}
