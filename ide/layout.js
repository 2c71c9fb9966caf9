// layout.js — the plan graph's automatic layout: a pure function from tasks and their
// dependencies to positions, so it is tested under node --test and costs one pass on
// the first paint. Layered (Sugiyama) drawing, left to right:
//   1. layers by longest path: a task sits one layer after its latest dependency, so
//      every edge points to a later layer;
//   2. an edge that spans layers passes through a small dummy node in each layer it
//      crosses, so it is routed between nodes instead of through them;
//   3. order within layers by barycenter sweeps (down, up, ...), keeping the order with
//      the fewest crossings;
//   4. vertical positions: each node pulled toward its neighbours, then the least
//      squares placement that keeps the order and the gaps (pool adjacent violators);
//   5. tasks with no dependency either way are packed into a grid under the graph
//      rather than stretching the first layer into one tall column.
// Nothing depends on iteration order of hash maps or on randomness: the same input
// gives the same output.

export const DEFAULTS = Object.freeze({
  nodeWidth: 236,
  nodeHeight: 78,
  layerGap: 76,
  nodeGap: 20,
  dummyHeight: 8,
  dummyGap: 6,
  margin: 32,
  sweeps: 12,
  placementRounds: 8,
});

// Longest-path layering without recursion (a chain of thousands must not overflow the
// stack). A dependency that closes a cycle (the server forbids them; a stale or hand-made
// plan might still hold one) is dropped and reported rather than looping.
function layering(n, deps) {
  const layer = new Array(n).fill(-1);
  const state = new Uint8Array(n); // 0 new, 1 on the stack, 2 done
  const dropped = new Set();
  for (let root = 0; root < n; root++) {
    if (state[root]) continue;
    const stack = [[root, 0]];
    state[root] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [v, i] = top;
      if (i < deps[v].length) {
        top[1]++;
        const d = deps[v][i];
        if (state[d] === 0) {
          state[d] = 1;
          stack.push([d, 0]);
        } else if (state[d] === 1) {
          dropped.add(`${d}>${v}`);
        }
        continue;
      }
      let l = 0;
      for (const d of deps[v]) if (!dropped.has(`${d}>${v}`)) l = Math.max(l, layer[d] + 1);
      layer[v] = l;
      state[v] = 2;
      stack.pop();
    }
  }
  return { layer, dropped };
}

// Crossings between two adjacent layers: the inversions among the edges' lower ends once
// they are sorted by their upper ends, counted with a Fenwick tree.
function crossingsBetween(upper, lowerPos, down, pos) {
  const ends = [];
  for (const u of upper) {
    const targets = down[u].map((v) => pos[v]).sort((a, b) => a - b);
    for (const p of targets) ends.push(p);
  }
  const size = lowerPos + 1;
  const tree = new Int32Array(size + 1);
  let crossings = 0;
  let seen = 0;
  for (const p of ends) {
    let le = 0;
    for (let i = p + 1; i > 0; i -= i & -i) le += tree[i];
    crossings += seen - le;
    for (let i = p + 1; i <= size; i += i & -i) tree[i]++;
    seen++;
  }
  return crossings;
}

function countCrossings(layers, down, pos) {
  let total = 0;
  for (let l = 0; l + 1 < layers.length; l++) {
    total += crossingsBetween(layers[l], layers[l + 1].length, down, pos);
  }
  return total;
}

// Reorders one layer by the mean position of each node's neighbours in the fixed layer.
// A node without neighbours there keeps its slot; ties keep the current order.
function sweepLayer(layer, neighbours, pos) {
  const movable = [];
  const slots = [];
  layer.forEach((v, i) => {
    const ns = neighbours[v];
    if (ns.length) {
      let sum = 0;
      for (const u of ns) sum += pos[u];
      movable.push({ v, bary: sum / ns.length, at: i });
      slots.push(i);
    }
  });
  movable.sort((a, b) => a.bary - b.bary || a.at - b.at);
  const next = layer.slice();
  movable.forEach((m, k) => {
    next[slots[k]] = m.v;
  });
  next.forEach((v, i) => {
    pos[v] = i;
  });
  return next;
}

function ordering(layers, up, down, pos, sweeps) {
  let best = layers.map((l) => l.slice());
  let bestCrossings = countCrossings(layers, down, pos);
  let current = layers;
  let stale = 0; // sweeps since the last improvement: four in a row end the search
  for (let s = 0; s < sweeps && bestCrossings > 0 && stale < 4; s++) {
    if (s % 2 === 0) {
      for (let l = 1; l < current.length; l++) current[l] = sweepLayer(current[l], up, pos);
    } else {
      for (let l = current.length - 2; l >= 0; l--) current[l] = sweepLayer(current[l], down, pos);
    }
    const c = countCrossings(current, down, pos);
    if (c < bestCrossings) {
      bestCrossings = c;
      best = current.map((l) => l.slice());
      stale = 0;
    } else {
      stale++;
    }
  }
  best.forEach((layer) =>
    layer.forEach((v, i) => {
      pos[v] = i;
    }),
  );
  return { layers: best, crossings: bestCrossings };
}

// Least-squares positions for one layer: minimise Σ w(y−want)² keeping y[i] ≥ y[i−1] +
// gap[i]. With z = y − (sum of gaps so far) this is isotonic regression on z, solved
// exactly by pooling adjacent violators.
function placeLayer(want, gaps, weights) {
  const n = want.length;
  const offset = new Array(n);
  let acc = 0;
  for (let i = 0; i < n; i++) {
    acc += i ? gaps[i] : 0;
    offset[i] = acc;
  }
  const blocks = []; // {value, weight, count}
  for (let i = 0; i < n; i++) {
    let block = { value: want[i] - offset[i], weight: weights[i], count: 1 };
    while (blocks.length && blocks[blocks.length - 1].value > block.value) {
      const prev = blocks.pop();
      const weight = prev.weight + block.weight;
      block = {
        value: (prev.value * prev.weight + block.value * block.weight) / weight,
        weight,
        count: prev.count + block.count,
      };
    }
    blocks.push(block);
  }
  const y = new Array(n);
  let i = 0;
  for (const b of blocks) for (let k = 0; k < b.count; k++, i++) y[i] = b.value + offset[i];
  return y;
}

function placement(layers, up, down, heights, isDummy, opts) {
  const n = heights.length;
  const y = new Float64Array(n);
  const gapsOf = (layer) =>
    layer.map((v, i) => {
      if (!i) return 0;
      const u = layer[i - 1];
      const gap = isDummy[u] && isDummy[v] ? opts.dummyGap : opts.nodeGap;
      return (heights[u] + heights[v]) / 2 + gap;
    });
  const gaps = layers.map(gapsOf);
  // A start: each layer stacked and centred on 0.
  layers.forEach((layer, l) => {
    let at = 0;
    layer.forEach((v, i) => {
      at += gaps[l][i];
      y[v] = at;
    });
    const mid = at / 2;
    for (const v of layer) y[v] -= mid;
  });
  const weights = layers.map((layer) => layer.map((v) => (isDummy[v] ? 2 : 1)));
  const rounds = opts.placementRounds;
  for (let r = 0; r < rounds; r++) {
    // Alternate the direction; the last rounds look both ways to balance.
    const order = r % 2 === 0 ? layers.map((_, l) => l) : layers.map((_, l) => layers.length - 1 - l);
    for (const l of order) {
      const layer = layers[l];
      const want = layer.map((v) => {
        const ns =
          r >= rounds - 2 ? up[v].concat(down[v]) : r % 2 === 0 ? up[v] : down[v];
        if (!ns.length) return y[v];
        let sum = 0;
        for (const u of ns) sum += y[u];
        return sum / ns.length;
      });
      const placed = placeLayer(want, gaps[l], weights[l]);
      layer.forEach((v, i) => {
        y[v] = placed[i];
      });
    }
  }
  return y;
}

// Where edges meet a node: spread along its side in the order of the other ends, so
// arrows into a node with several dependencies stay apart.
function ports(count, center, height) {
  if (count <= 1) return [center];
  const step = Math.min(12, (height - 20) / (count - 1));
  return Array.from({ length: count }, (_, k) => center + (k - (count - 1) / 2) * step);
}

// tasks: [{id, dependencies: [id, ...]}] in the order to keep when nothing decides
// otherwise (WBS order). Unknown and repeated dependencies are ignored.
// Returns {nodes: [{id, x, y, width, height, layer, order}], edges: [{from, to,
// points: [[x, y], ...]}], width, height, layers (ids per layer), crossings, dropped}.
export function layout(tasks, options = {}) {
  const opts = { ...DEFAULTS, ...options };
  const n = tasks.length;
  const index = new Map();
  tasks.forEach((t, i) => {
    if (!index.has(t.id)) index.set(t.id, i);
  });
  const deps = tasks.map((t, i) => {
    const seen = new Set();
    for (const d of t.dependencies || []) {
      const j = index.get(d);
      if (j !== undefined && j !== i && index.get(t.id) === i) seen.add(j);
    }
    return [...seen];
  });
  const { layer, dropped } = layering(n, deps);
  const edgesIn = deps.map((ds, v) => ds.filter((d) => !dropped.has(`${d}>${v}`)));
  const linked = new Uint8Array(n);
  edgesIn.forEach((ds, v) => {
    if (ds.length) linked[v] = 1;
    for (const d of ds) linked[d] = 1;
  });

  // The graph's nodes: linked tasks first, then the dummies of long edges.
  const isDummy = [];
  const heights = [];
  const layerOf = [];
  const up = [];
  const down = [];
  const taskOf = [];
  const node = new Int32Array(n).fill(-1);
  for (let i = 0; i < n; i++) {
    if (!linked[i] || index.get(tasks[i].id) !== i) continue;
    node[i] = isDummy.length;
    isDummy.push(false);
    heights.push(opts.nodeHeight);
    layerOf.push(layer[i]);
    up.push([]);
    down.push([]);
    taskOf.push(i);
  }
  const chains = []; // per edge: graph nodes from the dependency to the task
  edgesIn.forEach((ds, v) => {
    for (const d of ds) {
      const chain = [node[d]];
      for (let l = layer[d] + 1; l < layer[v]; l++) {
        const k = isDummy.length;
        isDummy.push(true);
        heights.push(opts.dummyHeight);
        layerOf.push(l);
        up.push([]);
        down.push([]);
        taskOf.push(-1);
        chain.push(k);
      }
      chain.push(node[v]);
      for (let k = 1; k < chain.length; k++) {
        down[chain[k - 1]].push(chain[k]);
        up[chain[k]].push(chain[k - 1]);
      }
      chains.push({ from: tasks[d].id, to: tasks[v].id, chain });
    }
  });

  const layerCount = layerOf.length ? Math.max(...layerOf) + 1 : 0;
  const layers = Array.from({ length: layerCount }, () => []);
  layerOf.forEach((l, k) => layers[l].push(k));
  // The first order: each layer by its up-neighbours' positions (a first down sweep),
  // the WBS order breaking ties, so a chain reads top to bottom as the plan does.
  const pos = new Int32Array(layerOf.length);
  const rank = (k) => (isDummy[k] ? Infinity : taskOf[k]);
  layers.forEach((lay, l) => {
    const key = new Map();
    for (const k of lay) {
      const ns = up[k];
      key.set(k, l && ns.length ? ns.reduce((s, u) => s + pos[u], 0) / ns.length : -1);
    }
    lay.sort((a, b) => key.get(a) - key.get(b) || rank(a) - rank(b) || a - b);
    lay.forEach((k, i) => {
      pos[k] = i;
    });
  });
  const ordered = ordering(layers, up, down, pos, opts.sweeps);
  const y = placement(ordered.layers, up, down, heights, isDummy, opts);

  let top = Infinity;
  let bottom = -Infinity;
  for (let k = 0; k < heights.length; k++) {
    top = Math.min(top, y[k] - heights[k] / 2);
    bottom = Math.max(bottom, y[k] + heights[k] / 2);
  }
  const shift = heights.length ? opts.margin - top : 0;
  const columnX = (l) => opts.margin + l * (opts.nodeWidth + opts.layerGap);
  const out = new Array(n);
  for (let k = 0; k < heights.length; k++) {
    y[k] += shift;
    if (isDummy[k]) continue;
    const i = taskOf[k];
    out[i] = {
      id: tasks[i].id,
      x: columnX(layerOf[k]),
      y: y[k] - opts.nodeHeight / 2,
      width: opts.nodeWidth,
      height: opts.nodeHeight,
      layer: layerOf[k],
      order: pos[k],
    };
  }

  // Tasks linked to nothing: a grid under the graph, in WBS order, row by row, as wide
  // as the graph (or roughly twice as wide as tall when alone).
  const lone = [];
  for (let i = 0; i < n; i++) if (!linked[i] && index.get(tasks[i].id) === i) lone.push(i);
  let height = heights.length ? bottom - top + 2 * opts.margin : opts.margin;
  const cols = lone.length ? Math.max(layerCount, Math.ceil(Math.sqrt(lone.length * 0.6))) : 0;
  if (lone.length) {
    const gridTop = heights.length ? height + opts.nodeGap : opts.margin;
    lone.forEach((i, k) => {
      const col = k % cols;
      const row = Math.floor(k / cols);
      out[i] = {
        id: tasks[i].id,
        x: columnX(col),
        y: gridTop + row * (opts.nodeHeight + opts.nodeGap * 1.5),
        width: opts.nodeWidth,
        height: opts.nodeHeight,
        layer: col,
        order: row,
      };
    });
    const rows = Math.ceil(lone.length / cols);
    height = gridTop + rows * (opts.nodeHeight + opts.nodeGap * 1.5) - opts.nodeGap * 1.5 + opts.margin;
  }
  const usedCols = Math.max(layerCount, Math.min(lone.length, cols));
  const width = usedCols ? columnX(usedCols - 1) + opts.nodeWidth + opts.margin : opts.margin * 2;

  const edges = routeEdges(chains, y, isDummy, heights, layerOf, columnX, opts);
  return {
    nodes: out.filter(Boolean),
    edges,
    width,
    height,
    layers: ordered.layers.map((lay) => lay.filter((k) => !isDummy[k]).map((k) => tasks[taskOf[k]].id)),
    crossings: ordered.crossings,
    dropped: [...dropped].map((key) => {
      const [d, v] = key.split('>').map(Number);
      return { from: tasks[d].id, to: tasks[v].id };
    }),
  };
}

function routeEdges(chains, y, isDummy, heights, layerOf, columnX, opts) {
  // Ports: outgoing edges leave a node's right side in the order of their next point,
  // incoming ones enter its left side in the order of their previous point.
  const outs = new Map();
  const ins = new Map();
  chains.forEach((c, e) => {
    const first = c.chain[0];
    const last = c.chain[c.chain.length - 1];
    if (!outs.has(first)) outs.set(first, []);
    outs.get(first).push({ e, by: y[c.chain[1]] });
    if (!ins.has(last)) ins.set(last, []);
    ins.get(last).push({ e, by: y[c.chain[c.chain.length - 2]] });
  });
  const start = new Array(chains.length);
  const end = new Array(chains.length);
  for (const [k, list] of outs) {
    list.sort((a, b) => a.by - b.by || a.e - b.e);
    ports(list.length, y[k], opts.nodeHeight).forEach((py, i) => {
      start[list[i].e] = py;
    });
  }
  for (const [k, list] of ins) {
    list.sort((a, b) => a.by - b.by || a.e - b.e);
    ports(list.length, y[k], opts.nodeHeight).forEach((py, i) => {
      end[list[i].e] = py;
    });
  }
  return chains.map((c, e) => {
    const from = c.chain[0];
    const to = c.chain[c.chain.length - 1];
    const points = [[columnX(layerOf[from]) + opts.nodeWidth, start[e]]];
    for (const k of c.chain.slice(1, -1)) {
      points.push([columnX(layerOf[k]), y[k]], [columnX(layerOf[k]) + opts.nodeWidth, y[k]]);
    }
    points.push([columnX(layerOf[to]), end[e]]);
    return { from: c.from, to: c.to, points };
  });
}

// An SVG path through the points: a horizontal S-curve between columns, straight
// through a dummy's column.
export function edgePath(points) {
  let d = `M${points[0][0].toFixed(1)},${points[0][1].toFixed(1)}`;
  for (let i = 1; i < points.length; i++) {
    const [x0, y0] = points[i - 1];
    const [x1, y1] = points[i];
    if (i % 2 === 0) {
      d += ` L${x1.toFixed(1)},${y1.toFixed(1)}`;
    } else {
      const mx = (x0 + x1) / 2;
      d += ` C${mx.toFixed(1)},${y0.toFixed(1)} ${mx.toFixed(1)},${y1.toFixed(1)} ${x1.toFixed(1)},${y1.toFixed(1)}`;
    }
  }
  return d;
}

// Cuts text to about `units` character widths (a CJK character counts two), ending in
// "…". SVG text does not ellipsize by itself; measuring every label would cost a layout
// per node on the first paint, so this estimates.
export function fitText(text, units) {
  const s = String(text ?? '');
  let used = 0;
  let cut = -1; // where the text stops if it must end in "…" (one unit kept for it)
  let i = 0;
  for (const ch of s) {
    const w = isWide(ch) ? 2 : 1;
    if (cut < 0 && used + w > units - 1) cut = i;
    used += w;
    if (used > units) return `${s.slice(0, cut).trimEnd()}…`;
    i += ch.length;
  }
  return s;
}

function isWide(ch) {
  const c = ch.codePointAt(0);
  return (
    (c >= 0x1100 && c <= 0x115f) ||
    (c >= 0x2e80 && c <= 0xa4cf) ||
    (c >= 0xac00 && c <= 0xd7a3) ||
    (c >= 0xf900 && c <= 0xfaff) ||
    (c >= 0xfe30 && c <= 0xfe4f) ||
    (c >= 0xff00 && c <= 0xff60) ||
    (c >= 0xffe0 && c <= 0xffe6) ||
    (c >= 0x1f300 && c <= 0x1faff) ||
    (c >= 0x20000 && c <= 0x3fffd)
  );
}
