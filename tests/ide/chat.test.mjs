// Tests of ide/chat.js's pure part (node --test tests/ide/): which QUESTION backlog items
// a conversation shows to be answered in place. The daemon files a chat question as
// {kind: QUESTION, task: its first task, metadata: {holds: [tasks]}} (orchestrator.rs,
// question_item); the chat's answer lists the ids it opened.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { questionsFor } from '../../ide/chat.js';

const backlog = [
  { id: 'b1-question', kind: 'QUESTION', task: 't2', metadata: { holds: ['t2', 't3'] }, description: 'Which database?' },
  { id: 'b2-t9', kind: 'FAILURE', task: 't9', metadata: { attempts: 3 } },
  { id: 'b3-question', kind: 'QUESTION', task: 't7', metadata: { holds: ['t7'] }, resolved_at: '2026-11-27T07:00:00Z', resolution: 'yes' },
  { id: 'b4-t5', kind: 'QUESTION', task: 't5', metadata: { attempts: 1 } },
];

test('the items a turn opened are shown, resolved or not', () => {
  const ids = questionsFor(backlog, ['b1-question', 'b3-question'], []).map((i) => i.id);
  assert.deepEqual(ids, ['b1-question', 'b3-question']);
});

test('open questions about tasks the conversation created are found in the backlog', () => {
  assert.deepEqual(questionsFor(backlog, [], ['t3']).map((i) => i.id), ['b1-question']);
  // A task's own question (exit 4) about a created task too; resolved ones found this way are not.
  assert.deepEqual(questionsFor(backlog, [], ['t5', 't7']).map((i) => i.id), ['b4-t5']);
  // Never a failure, never another conversation's question.
  assert.deepEqual(questionsFor(backlog, [], ['t9', 't1']), []);
  assert.deepEqual(questionsFor(undefined, ['x'], ['y']), []);
});

test('a chat question that names no task is found by its text in a reply', () => {
  const items = [
    { id: 'b5-question', kind: 'QUESTION', task: null, metadata: { holds: [] }, description: 'Which registry?' },
    { id: 'b6-question', kind: 'QUESTION', task: null, metadata: { holds: [] }, description: 'Which registry?', resolved_at: 'x' },
    { id: 'b7-t1', kind: 'QUESTION', task: 't1', metadata: { attempts: 1 }, description: 'Which registry?' },
  ];
  const replies = ['Created (2): t31-1, t31-2\n\nQuestion: Which registry?'];
  assert.deepEqual(questionsFor(items, [], [], replies).map((i) => i.id), ['b5-question']);
  assert.deepEqual(questionsFor(items, [], [], ['something else']), []);
});
