// Tests of the pure parts of the backlog, settings and processes views (node --test
// tests/ide/): which backlog items a filter shows and whether resolving one retries by
// default; the settings body sent and the field a refusal is shown at; how agent-runner's
// run events read as log lines.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { visibleItems, retryByDefault } from '../../ide/backlog.js';
import { settingsBody, fieldOfError, DEFAULT_MODELS, PROVIDERS } from '../../ide/settings.js';
import { runLine } from '../../ide/processes.js';

const items = [
  { id: 'b1-question', kind: 'QUESTION', task: null, metadata: { holds: [] }, created_at: '2026-11-27T07:00:00Z' },
  { id: 'b2-t1', kind: 'FAILURE', task: 't1', metadata: { attempts: 3 }, created_at: '2026-11-27T07:05:00Z', resolved_at: '2026-11-27T07:06:00Z' },
  { id: 'b3-t2', kind: 'QUESTION', task: 't2', metadata: { attempts: 1 }, created_at: '2026-11-27T07:10:00Z' },
  { id: 'b4-t3', kind: 'FAILURE', task: 't3', metadata: { attempts: 3 }, created_at: '2026-11-27T07:10:00Z' },
];

test('the backlog filter: open, resolved, all, by kind, newest first', () => {
  assert.deepEqual(visibleItems(items, 'open').map((i) => i.id), ['b4-t3', 'b3-t2', 'b1-question']);
  assert.deepEqual(visibleItems(items, 'resolved').map((i) => i.id), ['b2-t1']);
  assert.equal(visibleItems(items, 'all').length, 4);
  assert.deepEqual(visibleItems(items, 'open', 'QUESTION').map((i) => i.id), ['b3-t2', 'b1-question']);
  assert.deepEqual(visibleItems(undefined, 'open'), []);
});

test('resolving retries by default a failure and a task\'s own question, not a chat question', () => {
  assert.equal(retryByDefault(items[3]), true);
  assert.equal(retryByDefault(items[2]), true);
  assert.equal(retryByDefault(items[0]), false);
  assert.equal(retryByDefault({ kind: 'FAILURE', task: null }), false);
});

test('the settings body: key variable and base URL only for openai-chat, trimmed, empty left out', () => {
  assert.deepEqual(settingsBody({ provider: 'openai-chat', model: ' gpt-5.2 ', keyEnv: ' OPENAI_API_KEY ', baseUrl: '' }), {
    provider: 'openai-chat',
    model: 'gpt-5.2',
    api_key_env: 'OPENAI_API_KEY',
  });
  assert.deepEqual(settingsBody({ provider: 'mock', model: 'mock', keyEnv: 'X', baseUrl: 'http://x' }), { provider: 'mock', model: 'mock' });
  for (const p of PROVIDERS) assert.ok(DEFAULT_MODELS[p], p);
});

test('a refusal is shown at the field its key is about', () => {
  assert.equal(fieldOfError('settings.bad_key_variable'), 'keyEnv');
  assert.equal(fieldOfError('settings.bad_base_url'), 'baseUrl');
  assert.equal(fieldOfError('settings.empty_model'), 'model');
  assert.equal(fieldOfError('settings.unknown_provider'), 'provider');
  assert.equal(fieldOfError('settings.not_for_provider', 'base_url is for openai-chat, not mock'), 'baseUrl');
  assert.equal(fieldOfError('settings.not_for_provider', 'api_key_env is for openai-chat, not mock'), 'keyEnv');
  assert.equal(fieldOfError('io'), null);
});

test('run events read as log lines (src/runner/events.rs shapes)', () => {
  const ts = '2026-11-27T07:00:00Z';
  assert.deepEqual(runLine({ task: 't', attempt: 1, event: { event: 'state', from: 'PLANNING', to: 'WORKING', message: 'go', ts } }), {
    kind: 'state', text: 'PLANNING → WORKING — go', level: 'state', ts: Date.parse(ts),
  });
  assert.equal(runLine({ event: { event: 'action', action: 'worker.run', detail: 'codex exec' } }).text, '▶ worker.run codex exec');
  assert.equal(runLine({ event: { event: 'action_done', action: 'test.run', outcome: 'failed' } }).level, 'error');
  assert.equal(runLine({ event: { event: 'finished', status: 'complete', exit_code: 0 } }).level, 'ok');
  assert.equal(runLine({ event: { event: 'finished', status: 'failed', exit_code: 1 } }).level, 'error');
  assert.deepEqual(runLine({ text: 'not json' }), { kind: 'text', text: 'not json', level: 'plain', ts: null });
  assert.equal(runLine({ skipped_bytes: 70000 }).kind, 'skipped');
});
