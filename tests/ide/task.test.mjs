// Tests of ide/task.js's pure parts (node --test tests/ide/): matching the design's
// acceptance criteria to the verdicts in agent-runner's result JSON, and which attempt's
// result holds them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { criteriaVerdicts, lastFinished } from '../../ide/task.js';

// The shape agent-runner writes (src/runner/report.rs: TaskReport::result).
const result = {
  status: 'failed',
  exit_code: 1,
  acceptance_criteria: [
    { id: 'AC-1', description: 'The  handler answers 200', passed: true },
    { id: 'AC-2', description: 'tests pass', passed: false, comment: 'cargo test failed' },
    { id: 'AC-3', description: 'The task described in the PRD is done', passed: false },
  ],
};

test('criteria are matched by text (case and spacing aside) with their verdicts', () => {
  const { rows, extra } = criteriaVerdicts(['the handler answers 200', 'Tests pass', 'Docs updated'], result);
  assert.deepEqual(
    rows.map((r) => [r.text, r.verdict, r.id, r.comment]),
    [
      ['the handler answers 200', 'pass', 'AC-1', null],
      ['Tests pass', 'fail', 'AC-2', 'cargo test failed'],
      ['Docs updated', 'unknown', null, null],
    ],
  );
  // What the run checked beyond the design's list is not hidden.
  assert.deepEqual(extra.map((e) => [e.text, e.verdict]), [['The task described in the PRD is done', 'fail']]);
});

test('without a result every criterion is unknown; a missing list is no criteria', () => {
  assert.deepEqual(criteriaVerdicts(['a', 'b'], null).rows.map((r) => r.verdict), ['unknown', 'unknown']);
  assert.deepEqual(criteriaVerdicts(['a'], { status: 'complete' }).rows.map((r) => r.verdict), ['unknown']);
  assert.deepEqual(criteriaVerdicts(undefined, result).rows, []);
  assert.equal(criteriaVerdicts(undefined, result).extra.length, 3);
});

test('two identical criteria take two verdicts, in order', () => {
  const twice = { acceptance_criteria: [{ description: 'x', passed: true }, { description: 'x', passed: false }] };
  assert.deepEqual(criteriaVerdicts(['x', 'x'], twice).rows.map((r) => r.verdict), ['pass', 'fail']);
});

test('the verdicts come from the last attempt that has ended', () => {
  const attempts = [
    { number: 1, finished_at: '2026-11-27T07:00:00Z' },
    { number: 2, finished_at: '2026-11-27T07:01:00Z' },
    { number: 3 },
  ];
  assert.equal(lastFinished(attempts).number, 2);
  assert.equal(lastFinished([{ number: 1 }]), null);
  assert.equal(lastFinished(undefined), null);
});

test('a failed task\'s reason is its last attempt\'s summary unless the daemon gives one', async () => {
  const { reasonOf } = await import('../../ide/task.js');
  const attempts = [{ number: 1, finished_at: 'x', summary: 'tests failed' }, { number: 2 }];
  assert.equal(reasonOf({ state: 'FAILED', reason: null, attempts }), 'tests failed');
  assert.equal(reasonOf({ state: 'RETRY_WAIT', attempts }), 'tests failed');
  assert.equal(reasonOf({ state: 'BLOCKED', reason: 'dependency t1 failed', attempts }), 'dependency t1 failed');
  assert.equal(reasonOf({ state: 'SUCCEEDED', attempts }), null);
  assert.equal(reasonOf({ state: 'PENDING', attempts: [] }), null);
});

test('the open questions holding a task, and whether answering retries it', async () => {
  const { questionsOf, retriesOnAnswer } = await import('../../ide/task.js');
  const backlog = [
    { id: 'b1-question', kind: 'QUESTION', task: 't2', metadata: { holds: ['t2', 't3'] } },
    { id: 'b2-t3', kind: 'QUESTION', task: 't3', metadata: { attempts: 1 } },
    { id: 'b3-t3', kind: 'FAILURE', task: 't3', metadata: { attempts: 3 } },
    { id: 'b4-t3', kind: 'QUESTION', task: 't3', metadata: { attempts: 2 }, resolved_at: 'x' },
  ];
  assert.deepEqual(questionsOf(backlog, 't3').map((i) => i.id), ['b1-question', 'b2-t3']);
  assert.deepEqual(questionsOf(backlog, 't9'), []);
  // A task's own question: BLOCKED until retried. A chat's question only holds tasks back.
  assert.equal(retriesOnAnswer(backlog[1]), true);
  assert.equal(retriesOnAnswer(backlog[0]), false);
});
