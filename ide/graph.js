// graph.js — the plan as a dependency graph: SVG nodes placed by layout.js, arrows from
// each dependency to its dependent, pan (drag), zoom (wheel, buttons, keys), fit.
// The first render is one layout and one SVG build. A `task` event changes one node in
// place (its state, text and the edges leaving it); only a change of the plan's shape
// (tasks added or removed, dependencies changed) lays it out again, keeping the view.

import { register, t, formatDuration } from './i18n.js';
import { layout, edgePath, fitText, DEFAULTS } from './layout.js';
import { h, svg, clear, icon } from './dom.js';

register({
  en: {
    'graph.label': 'Task dependency graph',
    'graph.zoomIn': 'Zoom in',
    'graph.zoomOut': 'Zoom out',
    'graph.fit': 'Fit to view',
    'graph.hint': 'Drag to pan · wheel to zoom · / finds · Enter opens a task',
    'graph.attempt': 'attempt {n}',
    'graph.attempts': '{n} attempts',
    'graph.attempts1': '1 attempt',
    'graph.retryIn': 'Retry in {time}',
    'graph.retryNow': 'Retrying…',
    'graph.stopping': 'Stopping…',
    'graph.node': '{id}: {title}. {state}',
    'graph.find': 'Find a task',
    'graph.findHint': 'Find by id or title (/); Enter goes to the next match',
    'graph.matches': '{n} of {total}',
    'graph.noMatch': 'No match',
    'graph.clearFind': 'Clear the search',
    'graph.stateMatches': '{state}: {n} of {total}',
  },
  ja: {
    'graph.label': 'タスク依存関係グラフ',
    'graph.zoomIn': '拡大',
    'graph.zoomOut': '縮小',
    'graph.fit': '全体を表示',
    'graph.hint': 'ドラッグで移動 · ホイールで拡大縮小 · / で検索 · Enter でタスクを開く',
    'graph.attempt': '試行 {n}',
    'graph.attempts': '試行 {n} 回',
    'graph.attempts1': '試行 1 回',
    'graph.retryIn': '{time}後に再試行',
    'graph.retryNow': '再試行中…',
    'graph.stopping': '停止中…',
    'graph.node': '{id}: {title}。{state}',
    'graph.find': 'タスクを検索',
    'graph.findHint': 'ID またはタイトルで検索（/）。Enter で次の一致へ',
    'graph.matches': '{total} 件中 {n} 件目',
    'graph.noMatch': '一致なし',
    'graph.clearFind': '検索をクリア',
    'graph.stateMatches': '{state}: {total} 件中 {n} 件目',
  },
});

const MIN_SCALE = 0.08;
const MAX_SCALE = 2.5;
// Below this a first view is not fitted further: text must stay readable; Fit shows all.
const READABLE_SCALE = 0.55;
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

// What decides the layout: ids in order and their dependencies. States do not.
function shapeOf(rows) {
  return rows.map((r) => `${r.id}<${(r.dependencies || []).join(',')}`).join('|');
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

export function mountGraph(root, ctx) {
  const { store, openTask } = ctx;
  let result = null;
  let shape = null;
  let view = { x: 0, y: 0, k: 1 };
  let touched = false; // the user panned or zoomed: relayouts keep their view
  const nodes = new Map(); // id -> {g, parts}
  const edgesFrom = new Map(); // id -> [path]
  const edgesTo = new Map();
  let countdown = null;

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

  const button = (name, label, fn, test) =>
    h(
      'button',
      { type: 'button', class: 'icon-btn', title: label, 'aria-label': label, 'data-test': test, on: { click: fn } },
      icon(name),
    );
  const tools = h(
    'div',
    { class: 'graph-tools', role: 'toolbar', 'aria-label': t('graph.label') },
    button('zoom-in', t('graph.zoomIn'), () => zoomBy(1.25), 'graph-zoom-in'),
    button('zoom-out', t('graph.zoomOut'), () => zoomBy(0.8), 'graph-zoom-out'),
    button('fit', t('graph.fit'), () => fit(true), 'graph-fit'),
  );
  const hint = h('div', { class: 'graph-hint' }, t('graph.hint'));
  // Find: matching nodes stay bright, the rest dim; Enter centres the next match.
  let matches = [];
  let matchAt = -1;
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
        stateFocus = null;
        find(findInput.value);
      },
      keydown: (e) => {
        if (e.key === 'Enter') {
          e.preventDefault();
          step(e.shiftKey ? -1 : 1);
        } else if (e.key === 'Escape' && wrap.classList.contains('finding')) {
          e.stopPropagation();
          clearFind();
        }
      },
    },
  });
  const clearButton = h(
    'button',
    { type: 'button', class: 'icon-btn graph-find-clear', 'aria-label': t('graph.clearFind'), title: t('graph.clearFind'), on: { click: () => clearFind() } },
    icon('close'),
  );
  let stateFocus = null; // a state chosen in the plan's summary: its tasks are the matches
  const finder = h('div', { class: 'graph-find', role: 'search' }, findInput, findCount, clearButton);
  const wrap = h('div', { class: 'graph-wrap' }, canvas, finder, tools, hint);
  root.appendChild(wrap);

  function apply() {
    // An SVG transform is part of layout: setting the same one again would still cost one.
    const transform = `translate(${view.x.toFixed(1)},${view.y.toFixed(1)}) scale(${view.k.toFixed(4)})`;
    if (viewport.getAttribute('transform') !== transform) viewport.setAttribute('transform', transform);
    // Level of detail: text too small to read is dropped and the states' colours carry
    // the picture (a 200-task plan fitted to the screen).
    wrap.classList.toggle('zoomed-out', view.k < 0.45);
    wrap.classList.toggle('far', view.k < 0.3);
  }

  function size() {
    const r = canvas.getBoundingClientRect();
    return { w: r.width || 800, h: r.height || 600 };
  }

  // Fit the whole plan; the first view stops at a readable scale and shows the start
  // of the plan (top left) instead of a drawing too small to read.
  function fit(all, measured) {
    if (!result) return;
    const { w, h: full } = measured || size();
    // The find box sits over the top of the canvas: the drawing starts below it.
    const top = 52;
    const ht = Math.max(100, full - top);
    let k = Math.min(w / result.width, ht / result.height, 1.1);
    k = Math.max(MIN_SCALE, k);
    if (!all && k < READABLE_SCALE) {
      view = { k: READABLE_SCALE, x: 0, y: top - 20 };
    } else {
      view = { k, x: (w - result.width * k) / 2, y: top + Math.max(0, (ht - result.height * k) / 2) - 16 };
    }
    if (all) touched = false;
    apply();
  }

  function zoomAt(factor, cx, cy) {
    const k = Math.min(MAX_SCALE, Math.max(MIN_SCALE, view.k * factor));
    const f = k / view.k;
    view = { k, x: cx - (cx - view.x) * f, y: cy - (cy - view.y) * f };
    touched = true;
    apply();
  }

  function zoomBy(factor) {
    const { w, h: ht } = size();
    zoomAt(factor, w / 2, ht / 2);
  }

  function panBy(dx, dy) {
    view = { ...view, x: view.x + dx, y: view.y + dy };
    touched = true;
    apply();
  }

  // Keep a node that got the keyboard focus on screen.
  function reveal(id) {
    const at = result && result.nodes.find((n) => n.id === id);
    if (!at) return;
    const { w, h: ht } = size();
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
    if (dx || dy) panBy(dx, dy);
  }

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
    panBy(dx, dy);
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
        zoomAt(Math.exp(-e.deltaY * (e.ctrlKey ? 0.01 : 0.0015)), e.clientX - r.left, e.clientY - r.top);
      } else {
        panBy(-e.deltaX, 0);
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
      '+': () => zoomBy(1.25),
      '=': () => zoomBy(1.25),
      '-': () => zoomBy(0.8),
      0: () => fit(true),
      '/': () => findInput.focus(),
    };
    if (e.altKey && pans[e.key]) panBy(...pans[e.key]);
    else if (!e.altKey && keys[e.key]) keys[e.key]();
    else return;
    e.preventDefault();
  });

  function highlight(id, on) {
    for (const p of edgesFrom.get(id) || []) p.classList.toggle('hot', on);
    for (const p of edgesTo.get(id) || []) p.classList.toggle('hot', on);
    for (const p of [...(edgesFrom.get(id) || []), ...(edgesTo.get(id) || [])]) {
      p.setAttribute('marker-end', on ? 'url(#arrow-hot)' : markerOf(p));
    }
  }

  function markerOf(path) {
    return path.classList.contains('done') ? 'url(#arrow-done)' : 'url(#arrow-plain)';
  }

  function buildNode(at, row) {
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
    nodes.set(row.id, parts);
    fill(parts, row, Date.now());
    return g;
  }

  // Writes a node's state and text; skipped when nothing it shows changed.
  function fill(parts, row, now) {
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
    for (const p of edgesFrom.get(row.id) || []) {
      p.classList.toggle('done', state === 'SUCCEEDED');
      if (!p.classList.contains('hot')) p.setAttribute('marker-end', markerOf(p));
    }
  }

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
    reveal(g.getAttribute('data-task'));
    highlight(g.getAttribute('data-task'), true);
  });
  nodeLayer.addEventListener('focusout', (e) => {
    const g = nodeOf(e);
    if (g) highlight(g.getAttribute('data-task'), false);
  });
  nodeLayer.addEventListener('pointerover', (e) => {
    const g = nodeOf(e);
    if (g && !(e.relatedTarget && g.contains(e.relatedTarget))) highlight(g.getAttribute('data-task'), true);
  });
  nodeLayer.addEventListener('pointerout', (e) => {
    const g = nodeOf(e);
    if (g && !(e.relatedTarget && g.contains(e.relatedTarget)) && document.activeElement !== g) {
      highlight(g.getAttribute('data-task'), false);
    }
  });

  function build(measured) {
    const rows = store.rows();
    shape = shapeOf(rows);
    result = layout(rows);
    clear(edgeLayer);
    clear(nodeLayer);
    nodes.clear();
    edgesFrom.clear();
    edgesTo.clear();
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
    const byId = new Map(rows.map((r) => [r.id, r]));
    const frag = document.createDocumentFragment();
    for (const at of result.nodes) frag.appendChild(buildNode(at, byId.get(at.id)));
    if (measured) fit(false, measured);
    nodeLayer.appendChild(frag);
    if (stateFocus) applyState();
    else if (findInput.value) applyFind(findInput.value);
    markSelected();
    ensureCountdown();
  }

  // The open task is outlined, and brought on screen when it was opened from elsewhere
  // (the backlog, the chat, a dependency in the panel).
  function markSelected() {
    const m = /^#\/task\/(.+)$/.exec(location.hash);
    const selected = m ? decodeURIComponent(m[1]) : null;
    for (const [id, parts] of nodes) parts.g.classList.toggle('selected', id === selected);
    if (selected && nodes.has(selected)) reveal(selected);
  }

  function find(query) {
    applyFind(query);
    if (matches.length) step(1);
  }

  function clearFind() {
    stateFocus = null;
    findInput.value = '';
    applyFind('');
    for (const parts of nodes.values()) parts.g.classList.remove('current');
  }

  // The plan's summary asked for a state: its tasks light up, and asking again goes to
  // the next one (the way to walk the failures of a large plan).
  function focusState(state) {
    if (stateFocus === state && matches.length) {
      step(1);
      return;
    }
    stateFocus = state;
    findInput.value = '';
    applyState();
    if (matches.length) step(1);
  }

  function applyState() {
    matches = [];
    matchAt = -1;
    for (const [id, parts] of nodes) {
      const hit = store.tasks.get(id)?.state === stateFocus;
      parts.g.classList.toggle('match', hit);
      if (hit) matches.push(id);
    }
    wrap.classList.add('finding');
    findCount.textContent = matches.length ? '' : t('graph.noMatch');
  }

  // Marks the matches (also after a relayout, without moving the view).
  function applyFind(query) {
    const q = query.trim().toLowerCase();
    matches = [];
    matchAt = -1;
    for (const [id, parts] of nodes) {
      const row = store.tasks.get(id);
      const hit = Boolean(q) && (id.toLowerCase().includes(q) || String(row?.title || '').toLowerCase().includes(q));
      parts.g.classList.toggle('match', hit);
      if (hit) matches.push(id);
    }
    wrap.classList.toggle('finding', Boolean(q));
    findCount.textContent = q && !matches.length ? t('graph.noMatch') : '';
  }

  function step(dir) {
    if (!matches.length) return;
    matchAt = (matchAt + dir + matches.length) % matches.length;
    const id = matches[matchAt];
    findCount.textContent = stateFocus
      ? t('graph.stateMatches', { state: t(`state.${stateFocus}`), n: matchAt + 1, total: matches.length })
      : t('graph.matches', { n: matchAt + 1, total: matches.length });
    centre(id);
    for (const [nid, parts] of nodes) parts.g.classList.toggle('current', nid === id);
  }

  // Put a node in the middle of the view, at a readable scale.
  function centre(id) {
    const at = result && result.nodes.find((n) => n.id === id);
    if (!at) return;
    const { w, h: ht } = size();
    const k = Math.max(view.k, 0.8);
    view = { k, x: w / 2 - (at.x + at.width / 2) * k, y: ht / 2 - (at.y + at.height / 2) * k };
    touched = true;
    apply();
  }

  // A RETRY_WAIT node counts down each second; the timer runs only while one is shown.
  function ensureCountdown() {
    const waiting = [...store.tasks.values()].some((r) => r.state === 'RETRY_WAIT' && r.next_retry_at_ms);
    if (waiting && !countdown) {
      countdown = setInterval(() => {
        const now = Date.now();
        for (const r of store.tasks.values()) {
          if (r.state === 'RETRY_WAIT' && nodes.has(r.id)) fill(nodes.get(r.id), r, now);
        }
      }, 1000);
    } else if (!waiting && countdown) {
      clearInterval(countdown);
      countdown = null;
    }
  }

  function onTasks() {
    if (shapeOf(store.rows()) !== shape) {
      build();
      if (!touched) fit(false);
    } else {
      const now = Date.now();
      for (const r of store.rows()) if (nodes.has(r.id)) fill(nodes.get(r.id), r, now);
      ensureCountdown();
    }
  }

  function onTask(id) {
    const row = store.tasks.get(id);
    const parts = nodes.get(id);
    if (row && parts) fill(parts, row, Date.now());
    ensureCountdown();
  }

  // The canvas is measured while it is still empty (a cheap layout of the shell), and the
  // view set before the nodes go in: the first paint then lays out the 200 nodes once,
  // instead of once for the measurement and again for the new transform.
  const empty = size();
  build(empty);
  const offs = [store.on('tasks', onTasks), store.on('task', onTask), store.on('focus-state', focusState)];
  window.addEventListener('hashchange', markSelected);
  // The canvas has its size only once it is in the document and laid out.
  const resize = new ResizeObserver(() => {
    if (!touched) fit(false);
  });
  resize.observe(canvas);

  return () => {
    offs.forEach((off) => off());
    window.removeEventListener('hashchange', markSelected);
    resize.disconnect();
    if (countdown) clearInterval(countdown);
  };
}
