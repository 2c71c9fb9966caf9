// layout.test.mjs — the plan graph's layout (ide/layout.js): no overlaps, edges always
// forward, deterministic, crossings removed where they can be, and fast on 200 tasks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { layout, edgePath, fitText, DEFAULTS } from '../../ide/layout.js';

function overlaps(a, b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

function assertNoOverlap(result) {
  const ns = result.nodes;
  for (let i = 0; i < ns.length; i++) {
    for (let j = i + 1; j < ns.length; j++) {
      assert.ok(!overlaps(ns[i], ns[j]), `${ns[i].id} overlaps ${ns[j].id}`);
    }
  }
}

function assertForward(tasks, result) {
  const at = new Map(result.nodes.map((n) => [n.id, n]));
  let count = 0;
  for (const t of tasks) {
    for (const d of new Set(t.dependencies || [])) {
      if (!at.has(d) || d === t.id) continue;
      assert.ok(at.get(t.id).layer > at.get(d).layer, `${d} -> ${t.id} does not point forward`);
      assert.ok(at.get(t.id).x > at.get(d).x + at.get(d).width, `${t.id} is not right of ${d}`);
      count++;
    }
  }
  assert.equal(result.edges.length, count, 'one edge per known dependency');
}

// A seeded generator, so the "random" plans are the same on every run.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomPlan(n, seed, maxDeps = 3, lone = 0.1) {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const deps = new Set();
    if (i > 0 && r() > lone) {
      const k = 1 + Math.floor(r() * maxDeps);
      for (let j = 0; j < k; j++) deps.add(`t${Math.floor(r() * i)}`);
    }
    return { id: `t${i}`, dependencies: [...deps] };
  });
}

test('a chain goes left to right, one layer each, on one line', () => {
  const tasks = [
    { id: 'a', dependencies: [] },
    { id: 'b', dependencies: ['a'] },
    { id: 'c', dependencies: ['b'] },
  ];
  const r = layout(tasks);
  assert.deepEqual(r.layers, [['a'], ['b'], ['c']]);
  const ys = r.nodes.map((n) => n.y);
  assert.ok(Math.max(...ys) - Math.min(...ys) < 1, 'a chain is straight');
  assertForward(tasks, r);
  assert.equal(r.edges[0].from, 'a');
  assert.equal(r.edges[0].to, 'b');
});

test('an edge over several layers is routed through each layer it crosses', () => {
  const tasks = [
    { id: 'a', dependencies: [] },
    { id: 'b', dependencies: ['a'] },
    { id: 'c', dependencies: ['b'] },
    { id: 'd', dependencies: ['a', 'c'] },
  ];
  const r = layout(tasks);
  const long = r.edges.find((e) => e.from === 'a' && e.to === 'd');
  // start, two points in each of the two crossed layers, end
  assert.equal(long.points.length, 6);
  assertNoOverlap(r);
  assertForward(tasks, r);
  // The path stays clear of b and c, which sit in the layers it crosses.
  const boxes = r.nodes.filter((n) => n.id === 'b' || n.id === 'c');
  for (const [x, y] of long.points.slice(1, -1)) {
    for (const b of boxes) {
      assert.ok(!(x >= b.x && x <= b.x + b.width && y >= b.y && y <= b.y + b.height), 'routed through a node');
    }
  }
});

test('barycenter ordering removes the crossings a bad input order makes', () => {
  // In input order a1 a2 / b2 b1 the edges a1->b1 and a2->b2 cross.
  const tasks = [
    { id: 'a1', dependencies: [] },
    { id: 'a2', dependencies: [] },
    { id: 'b2', dependencies: ['a2'] },
    { id: 'b1', dependencies: ['a1'] },
    { id: 'c', dependencies: ['b1', 'b2'] },
  ];
  const r = layout(tasks);
  assert.equal(r.crossings, 0);
  const y = Object.fromEntries(r.nodes.map((n) => [n.id, n.y]));
  assert.equal(Math.sign(y.a1 - y.a2), Math.sign(y.b1 - y.b2));
});

test('a classic crossing case is untangled', () => {
  // K-like: x1->y3, x2->y2, x3->y1 cross pairwise in input order.
  const tasks = [
    { id: 'x1', dependencies: [] },
    { id: 'x2', dependencies: [] },
    { id: 'x3', dependencies: [] },
    { id: 'y1', dependencies: ['x3'] },
    { id: 'y2', dependencies: ['x2'] },
    { id: 'y3', dependencies: ['x1'] },
  ];
  assert.equal(layout(tasks).crossings, 0);
});

test('random plans: no overlaps, edges forward, deterministic', () => {
  for (const seed of [1, 2, 3, 42, 1234]) {
    const tasks = randomPlan(60, seed);
    const a = layout(tasks);
    const b = layout(structuredClone(tasks));
    assert.deepEqual(a, b, `seed ${seed} is not deterministic`);
    assertNoOverlap(a);
    assertForward(tasks, a);
    assert.equal(a.nodes.length, tasks.length);
    for (const n of a.nodes) {
      assert.ok(n.x >= 0 && n.y >= 0, 'inside the drawing');
      assert.ok(n.x + n.width <= a.width && n.y + n.height <= a.height, `${n.id} outside the drawing`);
    }
  }
});

test('sweeps do not leave more crossings than the first order', () => {
  const tasks = randomPlan(80, 7);
  const none = layout(tasks, { sweeps: 0 });
  const swept = layout(tasks);
  assert.ok(swept.crossings <= none.crossings, `${swept.crossings} > ${none.crossings}`);
});

test('tasks linked to nothing are packed in a grid under the graph, in order', () => {
  const tasks = [
    { id: 'a', dependencies: [] },
    { id: 'b', dependencies: ['a'] },
    ...Array.from({ length: 9 }, (_, i) => ({ id: `l${i}`, dependencies: [] })),
  ];
  const r = layout(tasks);
  assertNoOverlap(r);
  const at = Object.fromEntries(r.nodes.map((n) => [n.id, n]));
  const graphBottom = Math.max(at.a.y + at.a.height, at.b.y + at.b.height);
  for (let i = 0; i < 9; i++) assert.ok(at[`l${i}`].y > graphBottom, `l${i} is not under the graph`);
  assert.ok(at.l0.x < at.l1.x, 'row by row');
  // Not one tall column: 9 lone tasks use at least two columns.
  assert.ok(new Set(Object.values(at).map((n) => n.x)).size >= 2);
});

test('only lone tasks: a grid roughly wider than tall', () => {
  const tasks = Array.from({ length: 20 }, (_, i) => ({ id: `t${i}`, dependencies: [] }));
  const r = layout(tasks);
  assertNoOverlap(r);
  assert.ok(r.width > r.height / 2, `${r.width}x${r.height}`);
});

test('unknown, duplicate and self dependencies are ignored; a cycle is dropped, not looped', () => {
  const tasks = [
    { id: 'a', dependencies: ['a', 'zz', 'c'] },
    { id: 'b', dependencies: ['a', 'a'] },
    { id: 'c', dependencies: ['b'] },
  ];
  const r = layout(tasks);
  assert.equal(r.dropped.length, 1);
  assert.equal(r.edges.length, 2);
  assertNoOverlap(r);
  for (const e of r.edges) {
    const from = r.nodes.find((n) => n.id === e.from);
    const to = r.nodes.find((n) => n.id === e.to);
    assert.ok(to.layer > from.layer);
  }
});

test('an empty plan lays out to nothing', () => {
  const r = layout([]);
  assert.deepEqual(r.nodes, []);
  assert.deepEqual(r.edges, []);
  assert.ok(r.width > 0 && r.height > 0);
});

// Their time is measured where it counts, in the browser's first paint of a 200-task
// plan (tests/integration/multiverse_ide.rs prints it), not asserted here.
test('200 tasks lay out', () => {
  const tasks = randomPlan(200, 99, 4);
  const r = layout(tasks);
  assertNoOverlap(r);
  assertForward(tasks, r);
});

test('a 200-task chain with a hub does not blow up', () => {
  // Every task depends on its predecessor and on t0: long edges everywhere.
  const tasks = Array.from({ length: 200 }, (_, i) => ({
    id: `t${i}`,
    dependencies: i ? [`t${i - 1}`, 't0'] : [],
  }));
  const r = layout(tasks);
  assertNoOverlap(r);
  assertForward(tasks, r);
});

test('edgePath draws curves between columns and lines through them', () => {
  const d = edgePath([
    [0, 0],
    [10, 10],
    [20, 10],
    [30, 0],
  ]);
  assert.equal(d, 'M0.0,0.0 C5.0,0.0 5.0,10.0 10.0,10.0 L20.0,10.0 C25.0,10.0 25.0,0.0 30.0,0.0');
});

test('fitText cuts by width, counting CJK as two', () => {
  assert.equal(fitText('short', 10), 'short');
  assert.equal(fitText('a long title here', 8), 'a long…');
  assert.equal(fitText('日本語のタイトルです', 8), '日本語…');
  assert.equal(fitText(null, 5), '');
  assert.equal(DEFAULTS.nodeWidth > 0, true);
});
