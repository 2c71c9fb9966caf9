// graph/view.js — what the graph's viewport shows: pan (drag, Alt+arrows, the wheel
// sideways), zoom (the wheel, pinch, the buttons, + and -), fit (the button, 0), and
// moving the view to a node (one that gets the focus, a match of the find box). The view
// is graph.view {x, y, k}; graph.touched says the person moved it, so a relayout keeps it.

import { h, icon } from '../dom.js';
import { t } from '../i18n.js';

const MIN_SCALE = 0.08;
const MAX_SCALE = 2.5;
// Below this a first view is not fitted further: text must stay readable; Fit shows all.
const READABLE_SCALE = 0.55;

/** The zoom and fit buttons. */
export function tools(graph) {
  const button = (name, label, fn, test) =>
    h(
      'button',
      { type: 'button', class: 'icon-btn', title: label, 'aria-label': label, 'data-test': test, on: { click: fn } },
      icon(name),
    );
  return h(
    'div',
    { class: 'graph-tools', role: 'toolbar', 'aria-label': t('graph.label') },
    button('zoom-in', t('graph.zoomIn'), () => zoomBy(graph, 1.25), 'graph-zoom-in'),
    button('zoom-out', t('graph.zoomOut'), () => zoomBy(graph, 0.8), 'graph-zoom-out'),
    button('fit', t('graph.fit'), () => fit(graph, true), 'graph-fit'),
  );
}

export function apply(graph) {
  const { view, viewport, wrap } = graph;
  // An SVG transform is part of layout: setting the same one again would still cost one.
  const transform = `translate(${view.x.toFixed(1)},${view.y.toFixed(1)}) scale(${view.k.toFixed(4)})`;
  if (viewport.getAttribute('transform') !== transform) viewport.setAttribute('transform', transform);
  // Level of detail: text too small to read is dropped and the states' colours carry
  // the picture (a 200-task plan fitted to the screen).
  wrap.classList.toggle('zoomed-out', view.k < 0.45);
  wrap.classList.toggle('far', view.k < 0.3);
}

export function size(graph) {
  const r = graph.canvas.getBoundingClientRect();
  return { w: r.width || 800, h: r.height || 600 };
}

// Fit the whole plan; the first view stops at a readable scale and shows the start
// of the plan (top left) instead of a drawing too small to read.
export function fit(graph, all, measured) {
  const { result } = graph;
  if (!result) return;
  const { w, h: full } = measured || size(graph);
  // The find box sits over the top of the canvas: the drawing starts below it.
  const top = 52;
  const ht = Math.max(100, full - top);
  let k = Math.min(w / result.width, ht / result.height, 1.1);
  k = Math.max(MIN_SCALE, k);
  if (!all && k < READABLE_SCALE) {
    graph.view = { k: READABLE_SCALE, x: 0, y: top - 20 };
  } else {
    graph.view = { k, x: (w - result.width * k) / 2, y: top + Math.max(0, (ht - result.height * k) / 2) - 16 };
  }
  if (all) graph.touched = false;
  apply(graph);
}

function zoomAt(graph, factor, cx, cy) {
  const { view } = graph;
  const k = Math.min(MAX_SCALE, Math.max(MIN_SCALE, view.k * factor));
  const f = k / view.k;
  graph.view = { k, x: cx - (cx - view.x) * f, y: cy - (cy - view.y) * f };
  graph.touched = true;
  apply(graph);
}

function zoomBy(graph, factor) {
  const { w, h: ht } = size(graph);
  zoomAt(graph, factor, w / 2, ht / 2);
}

function panBy(graph, dx, dy) {
  const { view } = graph;
  graph.view = { ...view, x: view.x + dx, y: view.y + dy };
  graph.touched = true;
  apply(graph);
}

// Keep a node that got the keyboard focus on screen.
export function reveal(graph, id) {
  const { result, view } = graph;
  const at = result && result.nodes.find((n) => n.id === id);
  if (!at) return;
  const { w, h: ht } = size(graph);
  const left = view.x + at.x * view.k;
  const top = view.y + at.y * view.k;
  const right = left + at.width * view.k;
  const bottom = top + at.height * view.k;
  let dx = 0;
  let dy = 0;
  if (left < 16) dx = 16 - left;
  else if (right > w - 16) dx = w - 16 - right;
  if (top < 16) dy = 16 - top;
  else if (bottom > ht - 16) dy = ht - 16 - bottom;
  if (dx || dy) panBy(graph, dx, dy);
}

// Put a node in the middle of the view, at a readable scale.
export function centre(graph, id) {
  const { result, view } = graph;
  const at = result && result.nodes.find((n) => n.id === id);
  if (!at) return;
  const { w, h: ht } = size(graph);
  const k = Math.max(view.k, 0.8);
  graph.view = { k, x: w / 2 - (at.x + at.width / 2) * k, y: ht / 2 - (at.y + at.height / 2) * k };
  graph.touched = true;
  apply(graph);
}

/** The pointer, the wheel and the keys that move the view. */
export function listen(graph) {
  const { canvas, wrap } = graph;
  // Pan by dragging anywhere; a press that hardly moves is a click (opens a node).
  let drag = null;
  canvas.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    drag = { x: e.clientX, y: e.clientY, moved: false, id: e.pointerId };
  });
  canvas.addEventListener('pointermove', (e) => {
    if (!drag || drag.id !== e.pointerId) return;
    const dx = e.clientX - drag.x;
    const dy = e.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    if (!drag.moved) {
      drag.moved = true;
      try {
        canvas.setPointerCapture(e.pointerId);
      } catch {
        // A pointer the browser no longer tracks: the drag goes on without capture.
      }
      wrap.classList.add('panning');
    }
    drag.x = e.clientX;
    drag.y = e.clientY;
    panBy(graph, dx, dy);
  });
  const endDrag = (e) => {
    if (!drag || drag.id !== e.pointerId) return;
    if (drag.moved) {
      // Swallow the click that ends a drag, so panning over a node does not open it.
      const stop = (ev) => ev.stopPropagation();
      canvas.addEventListener('click', stop, { capture: true, once: true });
      setTimeout(() => canvas.removeEventListener('click', stop, { capture: true }), 0);
    }
    wrap.classList.remove('panning');
    drag = null;
  };
  canvas.addEventListener('pointerup', endDrag);
  canvas.addEventListener('pointercancel', endDrag);
  canvas.addEventListener(
    'wheel',
    (e) => {
      e.preventDefault();
      const r = canvas.getBoundingClientRect();
      if (e.ctrlKey || Math.abs(e.deltaY) >= Math.abs(e.deltaX)) {
        // Pinch (ctrlKey) and the wheel zoom around the pointer.
        zoomAt(graph, Math.exp(-e.deltaY * (e.ctrlKey ? 0.01 : 0.0015)), e.clientX - r.left, e.clientY - r.top);
      } else {
        panBy(graph, -e.deltaX, 0);
      }
    },
    { passive: false },
  );
  // + and - zoom, 0 fits, Alt+arrows pan (plain arrows and Tab are left to focus moves).
  wrap.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || (e.target.closest && e.target.closest('input, textarea, select'))) return;
    const step = 80;
    const pans = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
    const keys = {
      '+': () => zoomBy(graph, 1.25),
      '=': () => zoomBy(graph, 1.25),
      '-': () => zoomBy(graph, 0.8),
      0: () => fit(graph, true),
      '/': () => graph.findInput.focus(),
    };
    if (e.altKey && pans[e.key]) panBy(graph, ...pans[e.key]);
    else if (!e.altKey && keys[e.key]) keys[e.key]();
    else return;
    e.preventDefault();
  });
}
