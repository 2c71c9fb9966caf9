// shell.test.mjs — the pure parts of the shell's modules: the WBS grouping and progress
// (ide/wbs.js), the strings (ide/i18n.js) and how the store applies events to its rows
// (ide/store.js), under node --test without a browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { groupRows, progressOf } from '../../ide/wbs.js';
import { t, register, setLocale } from '../../ide/i18n.js';
import { store } from '../../ide/store.js';

const row = (id, milestone, phase, state = 'PENDING') => ({ id, title: id, milestone, phase, state, dependencies: [] });

test('WBS: milestone → phase → task in order of appearance, the unassigned last', () => {
  const groups = groupRows([
    row('a', 'M1', 'Design'),
    row('x', null, null),
    row('b', 'M1', 'Build'),
    row('c', 'M2', null),
    row('d', 'M1', 'Design'),
    row('y', null, 'Build'),
  ]);
  assert.deepEqual(
    groups.map((g) => g.name),
    ['M1', 'M2', ''],
  );
  assert.equal(groups[2].unassigned, true);
  const m1 = groups[0];
  assert.deepEqual([...m1.phases.keys()], ['Design', 'Build']);
  assert.deepEqual(m1.phases.get('Design').tasks.map((r) => r.id), ['a', 'd']);
  assert.deepEqual(m1.all.map((r) => r.id), ['a', 'b', 'd']);
  assert.deepEqual(groups[1].tasks.map((r) => r.id), ['c'], 'a task without a phase sits in its milestone');
  assert.deepEqual(groups[2].tasks.map((r) => r.id), ['x']);
  assert.deepEqual(groups[2].phases.get('Build').tasks.map((r) => r.id), ['y']);
});

test('WBS: no milestone anywhere gives one unassigned group', () => {
  const groups = groupRows([row('a'), row('b')]);
  assert.equal(groups.length, 1);
  assert.equal(groups[0].unassigned, true);
  assert.equal(groups[0].all.length, 2);
});

test('WBS progress counts succeeded and failed of the total', () => {
  const p = progressOf([row('a', 'M', null, 'SUCCEEDED'), row('b', 'M', null, 'FAILED'), row('c', 'M', null, 'RUNNING')]);
  assert.deepEqual(p, { done: 1, failed: 1, total: 3 });
  assert.deepEqual(progressOf([]), { done: 0, failed: 0, total: 0 });
});

test('i18n: placeholders, English fallback, the key when nothing is known', async () => {
  register({ en: { 'test.hello': 'Hello {name}, {n} left' }, ja: {} });
  assert.equal(t('test.hello', { name: 'Ann', n: 3 }), 'Hello Ann, 3 left');
  assert.equal(t('test.hello', { name: 'Ann' }), 'Hello Ann, {n} left');
  assert.equal(t('test.nothing'), 'test.nothing');
  assert.equal(t('state.RETRY_WAIT'), 'Waiting to retry');
  // A key Japanese lacks falls back to the English text, not to the key.
  await setLocale('ja');
  try {
    assert.equal(t('test.hello', { name: 'Ann', n: 3 }), 'Hello Ann, 3 left');
    assert.notEqual(t('state.RETRY_WAIT'), 'Waiting to retry');
  } finally {
    await setLocale('en');
  }
});

test('store: a task event updates its row in place and says which task changed', () => {
  store.tasks = new Map([['t1', { id: 't1', state: 'RUNNING', reason: null, attempts: 1 }]]);
  store.order = ['t1'];
  const seen = [];
  const off = store.on('task', (id) => seen.push(id));
  store.refetchPools = async () => {}; // no daemon here
  store.onTask({ task: 't1', from: 'RUNNING', to: 'RETRY_WAIT', node: 'in_progress', reason: null, next_retry_at_ms: 5000, attempts: 1 });
  off();
  const r = store.tasks.get('t1');
  assert.equal(r.state, 'RETRY_WAIT');
  assert.equal(r.next_retry_at_ms, 5000);
  assert.deepEqual(seen, ['t1']);
});

test('store: stopping marks a running row until its next state', () => {
  store.tasks = new Map([['t1', { id: 't1', state: 'RUNNING' }]]);
  store.refetchPools = async () => {};
  store.onTask({ task: 't1', stopping: true });
  assert.equal(store.tasks.get('t1').stopping, true);
  store.onTask({ task: 't1', from: 'RUNNING', to: 'CANCELED' });
  assert.equal(store.tasks.get('t1').stopping, false);
});

test('store: run lines are kept per task, the last 500', () => {
  store.runLines = new Map();
  for (let i = 0; i < 520; i++) store.onRun({ task: 'a', attempt: 1, text: `line ${i}` });
  store.onRun({ task: 'b', attempt: 1, text: 'other' });
  assert.equal(store.runLines.get('a').length, 500);
  assert.equal(store.runLines.get('a')[0].text, 'line 20');
  assert.equal(store.runLines.get('b').length, 1);
});

test('store: a handler that throws does not stop the others', () => {
  const got = [];
  const offA = store.on('x', () => {
    throw new Error('boom');
  });
  const offB = store.on('x', (d) => got.push(d));
  const err = console.error;
  console.error = () => {};
  store.emit('x', 1);
  console.error = err;
  offA();
  offB();
  assert.deepEqual(got, [1]);
});

// Every string exists in both languages: a key missing in Japanese would show English in
// a Japanese workspace without anyone noticing.
test('i18n: the English and Japanese tables have the same keys', async () => {
  const { default: en } = await import('../../ide/locales/en.js');
  const { default: ja } = await import('../../ide/locales/ja.js');
  assert.ok(Object.keys(en).length > 3, 'no strings found');
  assert.deepEqual(Object.keys(ja).sort(), Object.keys(en).sort());
});
