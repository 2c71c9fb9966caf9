// task.js — the task panel (mountTask): one task's title, state, why it is blocked or
// failed, its description (Markdown), acceptance criteria with the verdicts of its last
// finished attempt's result JSON, the suggested implementation, dependencies and
// dependents, and every attempt (status, times, duration, exit code, summary, files
// changed, its Task Note rendered on demand); a live retry countdown, Retry and Cancel.
// It refetches the task when a `task` or `attempt` event names it (the attempts' details
// are not in the events); a local one-second clock drives the countdown and the running
// attempt's duration.

import { h, clear, icon } from './dom.js';
import { register, t } from './i18n.js';
import { timeEl, duration, errorText, md, coalesce, ticker, stateChip } from './panels.js';
import { runLine } from './processes.js';

register({
  en: {
    'task.close': 'Close the task panel (Esc)',
    'task.loading': 'Loading task {id}…',
    'task.notFound': 'There is no task {id} in this workspace (it may have been deleted).',
    'task.loadFailed': 'Could not load task {id}: {error}',
    'task.reason': 'Why',
    'task.retry': 'Retry',
    'task.cancel': 'Cancel',
    'task.retryHint': 'Start this task again with fresh attempts',
    'task.retryNotApplicable': 'Only a failed or canceled task can be retried',
    'task.cancelHint': 'Cancel this task (a running attempt is stopped); it is not retried',
    'task.cancelNotApplicable': 'The task has ended; there is nothing to cancel',
    'task.retried': 'Task {id} will be retried.',
    'task.canceled': 'Task {id} is being canceled.',
    'task.actionFailed': 'Task {id}: {error}',
    'task.stopping': 'Stopping…',
    'task.retryIn': 'Next attempt in {time}',
    'task.retryNow': 'Next attempt is due now',
    'task.description': 'Description',
    'task.noDescription': 'No description.',
    'task.criteria': 'Acceptance criteria',
    'task.noCriteria': 'No acceptance criteria.',
    'task.criteriaFrom': 'Verdicts from attempt {n}.',
    'task.criteriaNone': 'No verdicts yet: no attempt has finished.',
    'task.criteriaNoResult': 'Attempt {n} left no result to read verdicts from.',
    'task.criteriaExtra': 'Also checked by the run',
    'task.verdict.pass': 'Met',
    'task.verdict.fail': 'Not met',
    'task.verdict.unknown': 'Not judged',
    'task.suggested': 'Suggested implementation',
    'task.language': 'Language',
    'task.files': 'Files',
    'task.constraints': 'Constraints',
    'task.dependencies': 'Depends on',
    'task.noDependencies': 'No dependencies.',
    'task.dependents': 'Needed by',
    'task.details': 'Details',
    'task.pool': 'Pool',
    'task.priority': 'Priority',
    'task.milestone': 'Milestone',
    'task.phase': 'Phase',
    'task.node': 'Node',
    'task.createdBy': 'Created by',
    'task.updated': 'Updated',
    'task.attempts': 'Attempts',
    'task.noAttempts': 'No attempts yet.',
    'task.attempt': 'Attempt {n}',
    'task.status.running': 'running',
    'task.status.complete': 'complete',
    'task.status.failed': 'failed',
    'task.status.incomplete': 'incomplete',
    'task.status.cancelled': 'cancelled',
    'task.status.needs_human': 'needs a human',
    'task.status.interrupted': 'interrupted',
    'task.status.unknown': 'no result',
    'task.started': 'Started',
    'task.finished': 'Finished',
    'task.duration': 'Duration',
    'task.exitCode': 'Exit code',
    'task.summary': 'Summary',
    'task.filesChanged': 'Files changed ({n})',
    'task.noFilesChanged': 'No files changed.',
    'task.showAllFiles': 'Show all {n}',
    'task.runDir': 'Run directory',
    'task.question': 'A question for you',
    'task.answerLabel': 'Your answer to: {question}',
    'task.answerPlaceholder': 'Your answer (added to the task\'s description)',
    'task.answerSubmit': 'Answer',
    'task.answerRetries': 'Answering starts the task again.',
    'task.answerReleases': 'Answering lets the task start.',
    'task.answered': 'Answer saved; task {id} goes on.',
    'task.answerFailed': 'The answer was not saved: {error}',
    'task.answerEmpty': 'Write an answer first.',
    'task.live': 'Live output of the running attempt',
    'task.liveWaiting': 'Waiting for the attempt\'s first event…',
    'task.noteOpen': 'Show Task Note',
    'task.noteHide': 'Hide Task Note',
    'task.noteLoading': 'Loading the note…',
    'task.noteMissing': 'This attempt left no Task Note.',
    'task.noteFailed': 'Could not load the note: {error}',
    'task.logOpen': 'Show log',
    'task.logHide': 'Hide log',
    'task.logLoading': 'Loading the log…',
    'task.logMissing': 'This attempt left no log.',
    'task.logFailed': 'Could not load the log: {error}',
    'task.logEmpty': 'agent-runner wrote no events.',
    'task.logCut': 'Only the last part is shown.',
    'task.stderr': 'agent-runner\'s standard error',
  },
  ja: {
    'task.close': 'タスクパネルを閉じる (Esc)',
    'task.loading': 'タスク {id} を読み込んでいます…',
    'task.notFound': 'このワークスペースにタスク {id} はありません（削除された可能性があります）。',
    'task.loadFailed': 'タスク {id} を読み込めませんでした: {error}',
    'task.reason': '理由',
    'task.retry': '再試行',
    'task.cancel': 'キャンセル',
    'task.retryHint': '新しい試行回数でこのタスクをやり直します',
    'task.retryNotApplicable': '再試行できるのは失敗またはキャンセルされたタスクだけです',
    'task.cancelHint': 'このタスクをキャンセルします（実行中の試行は停止）。再試行はされません',
    'task.cancelNotApplicable': 'タスクは終了しています。キャンセルするものはありません',
    'task.retried': 'タスク {id} を再試行します。',
    'task.canceled': 'タスク {id} をキャンセルしています。',
    'task.actionFailed': 'タスク {id}: {error}',
    'task.stopping': '停止中…',
    'task.retryIn': '次の試行まで {time}',
    'task.retryNow': '次の試行の時刻になりました',
    'task.description': '説明',
    'task.noDescription': '説明はありません。',
    'task.criteria': '受け入れ基準',
    'task.noCriteria': '受け入れ基準はありません。',
    'task.criteriaFrom': '試行 {n} の判定です。',
    'task.criteriaNone': '判定はまだありません（終了した試行がありません）。',
    'task.criteriaNoResult': '試行 {n} は判定を読める結果を残していません。',
    'task.criteriaExtra': '実行時に追加で確認された基準',
    'task.verdict.pass': '達成',
    'task.verdict.fail': '未達',
    'task.verdict.unknown': '未判定',
    'task.suggested': '実装の提案',
    'task.language': '言語',
    'task.files': 'ファイル',
    'task.constraints': '制約',
    'task.dependencies': '依存先',
    'task.noDependencies': '依存関係はありません。',
    'task.dependents': 'このタスクを待つタスク',
    'task.details': '詳細',
    'task.pool': 'プール',
    'task.priority': '優先度',
    'task.milestone': 'マイルストーン',
    'task.phase': 'フェーズ',
    'task.node': 'ノード',
    'task.createdBy': '作成元',
    'task.updated': '更新',
    'task.attempts': '試行',
    'task.noAttempts': '試行はまだありません。',
    'task.attempt': '試行 {n}',
    'task.status.running': '実行中',
    'task.status.complete': '完了',
    'task.status.failed': '失敗',
    'task.status.incomplete': '未完了',
    'task.status.cancelled': 'キャンセル',
    'task.status.needs_human': '要回答',
    'task.status.interrupted': '中断',
    'task.status.unknown': '結果なし',
    'task.started': '開始',
    'task.finished': '終了',
    'task.duration': '所要時間',
    'task.exitCode': '終了コード',
    'task.summary': '概要',
    'task.filesChanged': '変更されたファイル（{n} 件）',
    'task.noFilesChanged': '変更されたファイルはありません。',
    'task.showAllFiles': 'すべて表示（{n} 件）',
    'task.runDir': '実行ディレクトリ',
    'task.question': 'あなたへの質問',
    'task.answerLabel': '質問への回答: {question}',
    'task.answerPlaceholder': '回答（タスクの説明に追記されます）',
    'task.answerSubmit': '回答する',
    'task.answerRetries': '回答するとタスクを再開します。',
    'task.answerReleases': '回答するとタスクが開始できるようになります。',
    'task.answered': '回答を保存しました。タスク {id} は先に進みます。',
    'task.answerFailed': '回答を保存できませんでした: {error}',
    'task.answerEmpty': '先に回答を書いてください。',
    'task.live': '実行中の試行の出力',
    'task.liveWaiting': '試行の最初のイベントを待っています…',
    'task.noteOpen': 'タスクノートを表示',
    'task.noteHide': 'タスクノートを隠す',
    'task.noteLoading': 'ノートを読み込んでいます…',
    'task.noteMissing': 'この試行はタスクノートを残していません。',
    'task.noteFailed': 'ノートを読み込めませんでした: {error}',
    'task.logOpen': 'ログを表示',
    'task.logHide': 'ログを隠す',
    'task.logLoading': 'ログを読み込んでいます…',
    'task.logMissing': 'この試行はログを残していません。',
    'task.logFailed': 'ログを読み込めませんでした: {error}',
    'task.logEmpty': 'agent-runner はイベントを書いていません。',
    'task.logCut': '最後の部分だけを表示しています。',
    'task.stderr': 'agent-runner の標準エラー出力',
  },
});

/** States a cancel applies to (every state but a terminal one). */
const CANCELABLE = new Set(['PENDING', 'READY', 'BLOCKED', 'RUNNING', 'RETRY_WAIT']);
/** States a retry applies to (a new session of the lifecycle). */
const RETRYABLE = new Set(['FAILED', 'CANCELED']);
/** The statuses an attempt ends with (agent-runner's, and `interrupted` after a crash). */
const ATTEMPT_STATUSES = new Set(['running', 'complete', 'failed', 'incomplete', 'cancelled', 'needs_human', 'interrupted', 'unknown']);
/** Lines of a running attempt's live output shown in the panel. */
const LIVE_LINES = 40;
/** Files changed listed before "show all". */
const FILES_SHOWN = 12;

/**
 * The design's criteria with the verdicts of a result JSON (agent-runner's: each
 * `acceptance_criteria[]` has `id`, `description`, `passed`, `comment?`). The runner's
 * planner restates the criteria, so they are matched by their text (case and spacing
 * aside); what the run checked beyond the design's list comes back as `extra`.
 * verdict: 'pass' | 'fail' | 'unknown' (no result, or the criterion was not in it).
 */
export function criteriaVerdicts(criteria, result) {
  const checked = result && Array.isArray(result.acceptance_criteria) ? result.acceptance_criteria : [];
  const norm = (s) => String(s ?? '').trim().replace(/\s+/g, ' ').toLowerCase();
  const byText = new Map();
  checked.forEach((c, i) => {
    const key = norm(c && c.description);
    if (!byText.has(key)) byText.set(key, []);
    byText.get(key).push(i);
  });
  const used = new Set();
  const verdictOf = (c) => (c.passed === true ? 'pass' : c.passed === false ? 'fail' : 'unknown');
  const rows = (criteria || []).map((text) => {
    const candidates = byText.get(norm(text)) || [];
    const k = candidates.find((i) => !used.has(i));
    if (k === undefined) return { text, verdict: 'unknown', comment: null, id: null };
    used.add(k);
    const c = checked[k];
    return { text, verdict: verdictOf(c), comment: c.comment || null, id: c.id || null };
  });
  const extra = checked
    .map((c, i) => ({ c, i }))
    .filter(({ c, i }) => !used.has(i) && c && c.description)
    .map(({ c }) => ({ text: c.description, verdict: verdictOf(c), comment: c.comment || null, id: c.id || null }));
  return { rows, extra };
}

/**
 * Why a task is where it is: the blocked reason the daemon keeps, else, for a task whose
 * attempt failed (FAILED, RETRY_WAIT), that attempt's summary; null when there is none.
 */
export function reasonOf(task) {
  if (!task) return null;
  if (task.reason) return task.reason;
  if (task.state === 'FAILED' || task.state === 'RETRY_WAIT') {
    const last = lastFinished(task.attempts);
    if (last && last.summary) return last.summary;
  }
  return null;
}

/**
 * The open QUESTION backlog items that hold task `id`: its own question (an attempt
 * ended asking one: `task` is it) or a chat's question naming it (`metadata.holds`).
 */
export function questionsOf(backlog, id) {
  return (backlog || []).filter((item) => {
    if (!item || item.kind !== 'QUESTION' || item.resolved_at) return false;
    const holds = item.metadata && Array.isArray(item.metadata.holds) ? item.metadata.holds : [];
    return item.task === id || holds.includes(id);
  });
}

/**
 * Whether answering `item` also retries its task: a task's own question leaves it
 * BLOCKED until retried; a chat's question only holds its tasks back, and they start
 * once it is answered.
 */
export function retriesOnAnswer(item) {
  return !(item && item.metadata && Array.isArray(item.metadata.holds));
}

/** The last attempt that has ended (its result JSON holds the verdicts), or null. */
export function lastFinished(attempts) {
  for (let k = (attempts || []).length - 1; k >= 0; k--) {
    if (attempts[k].finished_at) return attempts[k];
  }
  return null;
}

/**
 * Mounts the panel for task `id` into `root`; returns its unmount. ctx: {api, store,
 * openTask, closeTask, toast}.
 */
export function mountTask(root, ctx, id) {
  const clock = ticker();
  const state = {
    task: null, // GET /api/tasks/{id}
    error: null,
    results: new Map(), // attempt number → result JSON, or null when it left none
    notes: new Map(), // attempt number → {status: loading|ok|missing|error, node?, error?}
    openNotes: new Set(),
    logs: new Map(), // attempt number → {status: loading|ok|missing|error, log?, error?}
    openLogs: new Set(),
    answers: new Map(), // backlog item id → {text, busy, error}
    showAllFiles: new Set(),
    busy: null, // 'retry' | 'cancel' while a request is out
    gone: false,
  };
  const panel = h('article', { class: 'tp', 'data-test': 'task-panel', 'data-task': id, 'aria-busy': 'true' });
  clear(root).appendChild(panel);

  const load = coalesce(async () => {
    try {
      state.task = await ctx.api.get(`/api/tasks/${encodeURIComponent(id)}`);
      state.error = null;
    } catch (e) {
      state.error = e;
    }
    if (state.gone) return;
    const last = state.task && lastFinished(state.task.attempts);
    if (last && !state.results.has(last.number)) {
      try {
        const answer = await ctx.api.get(`/api/tasks/${encodeURIComponent(id)}/attempts/${last.number}/result`);
        state.results.set(last.number, answer.result);
      } catch (e) {
        // 404 no_result: the attempt ended without writing one (it was killed, say).
        // Any other failure is left unknown and asked again at the next load.
        if (e && e.status === 404) state.results.set(last.number, null);
      }
    }
    if (!state.gone) draw();
  });

  function draw() {
    // Keep the focus where it was across a redraw (a button of an attempt, say).
    const active = document.activeElement && panel.contains(document.activeElement) ? document.activeElement : null;
    const focused = active ? focusKey(active) : null;
    const caret = active && typeof active.selectionStart === 'number' ? [active.selectionStart, active.selectionEnd] : null;
    clock.clear();
    panel.removeAttribute('aria-busy');
    const body = state.task ? drawTask(state.task) : drawProblem();
    panel.replaceChildren(...body);
    if (focused) {
      const again = panel.querySelector(focused);
      if (again) {
        again.focus({ preventScroll: true });
        if (caret && again.setSelectionRange) again.setSelectionRange(caret[0], caret[1]);
      }
    }
  }

  function drawProblem() {
    const close = closeButton();
    if (!state.error) return [h('div', { class: 'tp-head' }, h('span', { class: 'tp-id' }, id), close), h('p', { class: 'muted tp-pad' }, t('task.loading', { id }))];
    const text = state.error.status === 404 ? t('task.notFound', { id }) : t('task.loadFailed', { id, error: errorText(state.error) });
    return [h('div', { class: 'tp-head' }, h('span', { class: 'tp-id' }, id), close), h('p', { class: 'tp-pad error-text', role: 'alert' }, text)];
  }

  function closeButton() {
    return h(
      'button',
      { type: 'button', class: 'icon-btn', 'data-test': 'task-close', 'aria-label': t('task.close'), title: t('task.close'), on: { click: () => ctx.closeTask() } },
      icon('close'),
    );
  }

  function drawTask(task) {
    const design = task.design || {};
    const s = task.state || 'PENDING';
    const row = ctx.store.tasks.get(id);
    const stopping = Boolean(row && row.stopping);
    const head = h(
      'div',
      { class: 'tp-head' },
      h('span', { class: 'tp-id mono' }, id),
      stateChip(s, { 'data-test': 'task-state' }),
      stopping ? h('span', { class: 'tp-stopping' }, t('task.stopping')) : null,
      h('span', { class: 'spacer' }),
      closeButton(),
    );
    const title = h('h2', { class: 'tp-title', id: `tp-title-${id}` }, design.title || id);
    panel.setAttribute('aria-labelledby', `tp-title-${id}`);
    const parts = [head, h('div', { class: 'tp-pad' }, title, reasonBox(task), questionBoxes(), countdown(task), actions(s, stopping))];
    parts.push(section('task.description', descriptionBlock(design)));
    parts.push(section('task.criteria', criteriaBlock(design, task)));
    const suggested = suggestedBlock(design.suggested_impl);
    if (suggested) parts.push(section('task.suggested', suggested));
    parts.push(section('task.dependencies', dependenciesBlock(design)));
    parts.push(section('task.details', detailsBlock(design, task)));
    parts.push(section('task.attempts', attemptsBlock(task), (task.attempts || []).length));
    return parts;
  }

  function section(key, content, count) {
    return h(
      'section',
      { class: 'tp-section', 'aria-label': t(key) },
      h('h3', { class: 'tp-h' }, t(key), count ? h('span', { class: 'tp-count' }, String(count)) : null),
      content,
    );
  }

  function reasonBox(task) {
    const why = reasonOf(task);
    if (!why) return null;
    return h(
      'div',
      { class: `tp-reason state-${task.state || 'PENDING'}`, 'data-test': 'task-reason', role: 'note' },
      h('strong', {}, t('task.reason')),
      ' ',
      h('span', {}, why),
    );
  }

  /** The open questions holding this task, each answerable here. */
  function questionBoxes() {
    const items = questionsOf(ctx.store.backlog, id);
    if (!items.length) return null;
    return h('div', { class: 'tp-questions' }, ...items.map(questionBox));
  }

  function questionBox(item) {
    const draft = state.answers.get(item.id) || { text: '', busy: false, error: null };
    const field = h('textarea', {
      class: 'tp-answer',
      rows: '2',
      'data-test': 'task-answer',
      'data-item': item.id,
      'aria-label': t('task.answerLabel', { question: item.description || item.title }),
      placeholder: t('task.answerPlaceholder'),
      value: draft.text,
      disabled: draft.busy,
      on: {
        input: (e) => state.answers.set(item.id, { ...draft, text: e.target.value, error: null }),
        keydown: (e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            answer(item);
          }
        },
      },
    });
    return h(
      'div',
      { class: 'tp-question', 'data-test': 'task-question', 'data-item': item.id },
      h('div', { class: 'tp-q-head' }, t('task.question')),
      h('p', { class: 'tp-q-text' }, item.description || item.title),
      field,
      h(
        'div',
        { class: 'tp-q-actions' },
        h('span', { class: 'muted tp-small' }, t(retriesOnAnswer(item) ? 'task.answerRetries' : 'task.answerReleases')),
        h('button', { type: 'button', class: 'btn btn-primary btn-small', 'data-test': 'task-answer-submit', 'data-item': item.id, disabled: draft.busy, on: { click: () => answer(item) } }, t('task.answerSubmit')),
      ),
      draft.error ? h('p', { class: 'error-text tp-small', role: 'alert' }, draft.error) : null,
    );
  }

  async function answer(item) {
    const draft = state.answers.get(item.id) || { text: '' };
    const text = (draft.text || '').trim();
    if (!text) {
      state.answers.set(item.id, { text: '', busy: false, error: t('task.answerEmpty') });
      draw();
      return;
    }
    state.answers.set(item.id, { text, busy: true, error: null });
    draw();
    try {
      await ctx.api.post(`/api/backlog/${encodeURIComponent(item.id)}/resolve`, { note: text, retry: retriesOnAnswer(item) });
      state.answers.delete(item.id);
      ctx.toast(t('task.answered', { id }), 'info');
      await ctx.store.refetchBacklog();
    } catch (e) {
      state.answers.set(item.id, { text, busy: false, error: t('task.answerFailed', { error: errorText(e) }) });
    }
    if (!state.gone) load();
  }

  function countdown(task) {
    const at = task.next_retry_at_ms;
    if (at === null || at === undefined || task.state !== 'RETRY_WAIT') return null;
    const text = h('span', {});
    const box = h('div', { class: 'tp-countdown', 'data-test': 'retry-countdown', 'data-at': String(at), role: 'timer', 'aria-live': 'off' }, h('span', { class: 'tp-countdown-dot', 'aria-hidden': 'true' }), text);
    clock.add((now) => {
      const left = at - now;
      text.textContent = left > 0 ? t('task.retryIn', { time: countdownText(left) }) : t('task.retryNow');
    });
    return box;
  }

  function actions(s, stopping) {
    const canRetry = RETRYABLE.has(s);
    const canCancel = CANCELABLE.has(s) && !stopping;
    const retry = h(
      'button',
      {
        type: 'button',
        class: 'btn btn-primary',
        'data-test': 'task-retry',
        disabled: !canRetry || state.busy !== null,
        title: canRetry ? t('task.retryHint') : t('task.retryNotApplicable'),
        on: { click: () => act('retry') },
      },
      t('task.retry'),
    );
    const cancel = h(
      'button',
      {
        type: 'button',
        class: 'btn btn-danger',
        'data-test': 'task-cancel',
        disabled: !canCancel || state.busy !== null,
        title: canCancel ? t('task.cancelHint') : t('task.cancelNotApplicable'),
        on: { click: () => act('cancel') },
      },
      t('task.cancel'),
    );
    return h('div', { class: 'tp-actions' }, retry, cancel);
  }

  async function act(what) {
    state.busy = what;
    draw();
    try {
      await ctx.api.post(`/api/tasks/${encodeURIComponent(id)}/${what}`, {});
      ctx.toast(t(what === 'retry' ? 'task.retried' : 'task.canceled', { id }), 'info');
    } catch (e) {
      ctx.toast(t('task.actionFailed', { id, error: errorText(e) }), 'error');
    } finally {
      state.busy = null;
      if (!state.gone) load();
    }
  }

  function descriptionBlock(design) {
    const box = h('div', { class: 'tp-description', 'data-test': 'task-description' });
    if (design.description && design.description.trim()) box.appendChild(md(design.description));
    else box.appendChild(h('p', { class: 'muted' }, t('task.noDescription')));
    return box;
  }

  function criteriaBlock(design, task) {
    const last = lastFinished(task.attempts);
    const result = last ? state.results.get(last.number) : undefined;
    const { rows, extra } = criteriaVerdicts(design.acceptance_criteria || [], result);
    const item = (c) =>
      h(
        'li',
        { class: `tp-criterion verdict-${c.verdict}`, 'data-test': 'criterion', 'data-verdict': c.verdict },
        h('span', { class: 'tp-verdict', title: t(`task.verdict.${c.verdict}`) }, verdictMark(c.verdict), h('span', { class: 'sr-only' }, t(`task.verdict.${c.verdict}`))),
        h('span', { class: 'tp-criterion-text' }, c.id ? h('span', { class: 'tp-crit-id mono' }, c.id) : null, c.text, c.comment ? h('span', { class: 'tp-comment' }, c.comment) : null),
      );
    const note = !last
      ? t('task.criteriaNone')
      : result === null
        ? t('task.criteriaNoResult', { n: last.number })
        : t('task.criteriaFrom', { n: last.number });
    const out = [];
    if (rows.length) out.push(h('ul', { class: 'tp-criteria' }, ...rows.map(item)));
    else out.push(h('p', { class: 'muted' }, t('task.noCriteria')));
    if (extra.length) {
      out.push(h('p', { class: 'tp-sub' }, t('task.criteriaExtra')));
      out.push(h('ul', { class: 'tp-criteria' }, ...extra.map(item)));
    }
    if (rows.length || extra.length) out.push(h('p', { class: 'muted tp-small' }, note));
    return h('div', {}, ...out);
  }

  function suggestedBlock(s) {
    if (!s || (!s.language && !(s.file_paths || []).length && !(s.constraints || []).length)) return null;
    const dl = h('dl', { class: 'tp-dl' });
    if (s.language) dl.append(h('dt', {}, t('task.language')), h('dd', {}, s.language));
    if ((s.file_paths || []).length) {
      dl.append(h('dt', {}, t('task.files')), h('dd', {}, h('ul', { class: 'tp-files' }, ...s.file_paths.map((f) => h('li', { class: 'mono' }, f)))));
    }
    if ((s.constraints || []).length) {
      dl.append(h('dt', {}, t('task.constraints')), h('dd', {}, h('ul', {}, ...s.constraints.map((c) => h('li', {}, c)))));
    }
    return dl;
  }

  function taskLink(dep, attrs = {}) {
    const row = ctx.store.tasks.get(dep);
    const s = (row && row.state) || 'PENDING';
    return h(
      'button',
      { type: 'button', class: `tp-dep state-${s}`, 'data-task': dep, 'data-state': s, title: row ? `${row.title} — ${t(`state.${s}`)}` : dep, on: { click: () => ctx.openTask(dep) }, ...attrs },
      h('span', { class: 'state-dot', 'aria-hidden': 'true' }),
      h('span', { class: 'mono' }, dep),
      row ? h('span', { class: 'tp-dep-title' }, row.title) : null,
    );
  }

  function dependenciesBlock(design) {
    const deps = design.dependencies || [];
    const dependents = [...ctx.store.tasks.values()].filter((r) => (r.dependencies || []).includes(id)).map((r) => r.id);
    const out = [];
    if (deps.length) out.push(h('div', { class: 'tp-deps' }, ...deps.map((d) => taskLink(d, { 'data-test': 'task-dependency' }))));
    else out.push(h('p', { class: 'muted' }, t('task.noDependencies')));
    if (dependents.length) {
      out.push(h('p', { class: 'tp-sub' }, t('task.dependents')));
      out.push(h('div', { class: 'tp-deps' }, ...dependents.map((d) => taskLink(d, { 'data-test': 'task-dependent' }))));
    }
    return h('div', {}, ...out);
  }

  function detailsBlock(design, task) {
    const dl = h('dl', { class: 'tp-dl tp-dl-grid' });
    const add = (key, value) => {
      if (value === null || value === undefined || value === '') return;
      dl.append(h('dt', {}, t(key)), h('dd', {}, value));
    };
    add('task.pool', design.pool);
    add('task.priority', String(design.priority ?? 0));
    add('task.milestone', design.milestone);
    add('task.phase', design.phase);
    add('task.node', task.node);
    add('task.createdBy', design.created_by);
    if (design.updated_at) add('task.updated', timeEl(design.updated_at));
    return dl;
  }

  function attemptsBlock(task) {
    const attempts = task.attempts || [];
    if (!attempts.length) return h('p', { class: 'muted' }, t('task.noAttempts'));
    // Newest first: the one a person looks for is the last.
    return h('ol', { class: 'tp-attempts', reversed: true }, ...[...attempts].reverse().map(attemptItem));
  }

  function attemptItem(a) {
    const running = !a.finished_at;
    const status = a.status || (running ? 'running' : 'unknown');
    // The result's word, in the page's language when it is one agent-runner writes.
    const statusText = ATTEMPT_STATUSES.has(status) ? t(`task.status.${status}`) : status;
    const dur = h('span', {}, duration(a.started_at, a.finished_at));
    if (running) clock.add((now) => (dur.textContent = duration(a.started_at, null, now)));
    const dl = h(
      'dl',
      { class: 'tp-dl tp-dl-grid' },
      h('dt', {}, t('task.started')),
      h('dd', {}, timeEl(a.started_at)),
      h('dt', {}, t('task.finished')),
      h('dd', {}, running ? '—' : timeEl(a.finished_at)),
      h('dt', {}, t('task.duration')),
      h('dd', { 'data-test': 'attempt-duration' }, dur),
      h('dt', {}, t('task.exitCode')),
      h('dd', { class: 'mono', 'data-test': 'attempt-exit-code' }, a.exit_code === null || a.exit_code === undefined ? '—' : String(a.exit_code)),
    );
    const files = a.files_changed || [];
    const all = state.showAllFiles.has(a.number);
    const filesBlock = files.length
      ? h(
          'div',
          { class: 'tp-files-changed', 'data-test': 'attempt-files' },
          h('div', { class: 'tp-sub' }, t('task.filesChanged', { n: files.length })),
          h('ul', { class: 'tp-files' }, ...(all ? files : files.slice(0, FILES_SHOWN)).map((f) => h('li', { class: 'mono' }, f))),
          !all && files.length > FILES_SHOWN
            ? h('button', { type: 'button', class: 'btn btn-quiet btn-small', 'data-attempt': String(a.number), on: { click: () => { state.showAllFiles.add(a.number); draw(); } } }, t('task.showAllFiles', { n: files.length }))
            : null,
        )
      : h('p', { class: 'muted tp-small', 'data-test': 'attempt-files' }, t('task.noFilesChanged'));
    const open = state.openNotes.has(a.number);
    const noteButton = h(
      'button',
      {
        type: 'button',
        class: 'btn btn-small',
        'data-test': 'attempt-note-open',
        'data-attempt': String(a.number),
        'aria-expanded': String(open),
        disabled: running,
        on: { click: () => toggleNote(a.number) },
      },
      t(open ? 'task.noteHide' : 'task.noteOpen'),
    );
    // A finished attempt's log, read when asked (a running one shows its events live).
    const logOpen = state.openLogs.has(a.number);
    const logButton = running
      ? null
      : h(
          'button',
          {
            type: 'button',
            class: 'btn btn-small',
            'data-test': 'attempt-log-open',
            'data-attempt': String(a.number),
            'aria-expanded': String(logOpen),
            on: { click: () => toggleLog(a.number) },
          },
          t(logOpen ? 'task.logHide' : 'task.logOpen'),
        );
    return h(
      'li',
      { class: `tp-attempt status-${cssToken(status)}`, 'data-test': 'attempt', 'data-attempt': String(a.number), 'data-status': status },
      h(
        'div',
        { class: 'tp-attempt-head' },
        h('strong', { class: 'tp-attempt-label', 'data-test': 'attempt-label' }, t('task.attempt', { n: a.number })),
        h('span', { class: `tp-status status-${cssToken(status)}`, 'data-test': 'attempt-status' }, statusText),
        h('span', { class: 'tp-attempt-actions' }, logButton, noteButton),
      ),
      dl,
      a.summary ? h('p', { class: 'tp-summary', 'data-test': 'attempt-summary' }, a.summary) : null,
      filesBlock,
      a.run_dir ? h('p', { class: 'muted tp-small', title: t('task.runDir') }, h('span', { class: 'mono' }, a.run_dir)) : null,
      running ? liveBlock(a.number) : null,
      logOpen ? logBlock(a.number) : null,
      open ? noteBlock(a.number) : null,
    );
  }

  /** The running attempt's agent-runner events as they come (kept by the store). */
  function liveBlock(n) {
    const lines = (ctx.store.runLines.get(id) || []).filter((d) => d.attempt === n).slice(-LIVE_LINES);
    const box = h('div', { class: 'tp-live', 'data-test': 'attempt-live', 'data-attempt': String(n), role: 'log', 'aria-label': t('task.live') });
    if (!lines.length) box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.liveWaiting')));
    for (const d of lines) box.appendChild(liveLine(d));
    state.live = box;
    requestAnimationFrame(() => (box.scrollTop = box.scrollHeight));
    return box;
  }

  function noteBlock(n) {
    const note = state.notes.get(n);
    const box = h('div', { class: 'tp-note', 'data-test': 'note', 'data-attempt': String(n), 'aria-live': 'polite' });
    if (!note || note.status === 'loading') box.appendChild(h('p', { class: 'muted' }, t('task.noteLoading')));
    else if (note.status === 'ok') box.appendChild(note.node);
    else if (note.status === 'missing') box.appendChild(h('p', { class: 'muted' }, t('task.noteMissing')));
    else box.appendChild(h('p', { class: 'error-text' }, t('task.noteFailed', { error: errorText(note.error) })));
    return box;
  }

  /** A finished attempt's log: agent-runner's events as lines, then its stderr's tail. */
  function logBlock(n) {
    const known = state.logs.get(n);
    const box = h('div', { class: 'tp-live tp-log', 'data-test': 'attempt-log', 'data-attempt': String(n), role: 'log' });
    if (!known || known.status === 'loading') box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.logLoading')));
    else if (known.status === 'missing') box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.logMissing')));
    else if (known.status === 'error') box.appendChild(h('div', { class: 'tp-live-line level-error' }, t('task.logFailed', { error: errorText(known.error) })));
    else {
      const log = known.log;
      if (log.events_cut) box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.logCut')));
      if (!log.events.length) box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.logEmpty')));
      // The file's lines are what `run` events carried: an event, or {text} for a line
      // that was not JSON.
      for (const e of log.events) {
        const plain = e && typeof e.text === 'string' && Object.keys(e).length === 1;
        box.appendChild(liveLine(plain ? { text: e.text } : { event: e }));
      }
      if (log.stderr) {
        box.appendChild(h('div', { class: 'tp-live-empty' }, t('task.stderr') + (log.stderr_cut ? ` — ${t('task.logCut')}` : '')));
        box.appendChild(h('div', { class: 'tp-live-line', 'data-test': 'attempt-stderr' }, log.stderr));
      }
    }
    return box;
  }

  async function toggleLog(n) {
    if (state.openLogs.has(n)) {
      state.openLogs.delete(n);
      draw();
      return;
    }
    state.openLogs.add(n);
    if (!state.logs.has(n) || state.logs.get(n).status === 'error') {
      state.logs.set(n, { status: 'loading' });
      draw();
      try {
        const log = await ctx.api.get(`/api/tasks/${encodeURIComponent(id)}/attempts/${n}/log`);
        state.logs.set(n, { status: 'ok', log });
      } catch (e) {
        state.logs.set(n, e && e.status === 404 ? { status: 'missing' } : { status: 'error', error: e });
      }
    }
    if (!state.gone) draw();
  }

  async function toggleNote(n) {
    if (state.openNotes.has(n)) {
      state.openNotes.delete(n);
      draw();
      return;
    }
    state.openNotes.add(n);
    const known = state.notes.get(n);
    if (known && (known.status === 'ok' || known.status === 'loading')) {
      draw();
      return;
    }
    state.notes.set(n, { status: 'loading' });
    draw();
    try {
      const answer = await ctx.api.get(`/api/tasks/${encodeURIComponent(id)}/attempts/${n}/note`);
      // Rendered once and kept: a redraw moves the same nodes, it does not re-parse.
      state.notes.set(n, { status: 'ok', node: md(answer.markdown) });
    } catch (e) {
      state.notes.set(n, e && e.status === 404 ? { status: 'missing' } : { status: 'error', error: e });
    }
    if (!state.gone) draw();
  }

  const offs = [
    ctx.store.on('task', (changed) => {
      if (changed === id) load();
      // A dependency's colour changed: the chips show it.
      else if (state.task && (state.task.design.dependencies || []).includes(changed)) draw();
    }),
    ctx.store.on('attempt', (d) => {
      if (d && d.task === id) load();
    }),
    // A line of the running attempt: appended, not redrawn.
    ctx.store.on('run', (d) => {
      const box = state.live;
      if (!d || d.task !== id || !box || !box.isConnected || box.getAttribute('data-attempt') !== String(d.attempt)) return;
      const empty = box.querySelector('.tp-live-empty');
      if (empty) empty.remove();
      const stick = box.scrollHeight - box.scrollTop - box.clientHeight < 30;
      box.appendChild(liveLine(d));
      while (box.childElementCount > LIVE_LINES) box.firstChild.remove();
      if (stick) box.scrollTop = box.scrollHeight;
    }),
    // The plan changed (a chat's patch, an answered question adds to the description).
    ctx.store.on('tasks', () => load()),
    // A question about this task opened or answered.
    ctx.store.on('backlog', () => draw()),
  ];
  draw();
  load();
  return () => {
    state.gone = true;
    clock.clear();
    offs.forEach((off) => off());
  };
}

/** "1 min 05 s" style text for a countdown (ms > 0). */
export function countdownText(ms) {
  const s = Math.ceil(ms / 1000);
  if (s < 60) return t('time.seconds', { n: s });
  const m = Math.floor(s / 60);
  if (m < 60) return t('time.minutes', { m, s: s % 60 });
  return t('time.hours', { h: Math.floor(m / 60), m: m % 60 });
}

function liveLine(d) {
  const line = runLine(d);
  return h('div', { class: `tp-live-line level-${line.level}` }, line.text);
}

function verdictMark(verdict) {
  return h('span', { class: 'tp-mark', 'aria-hidden': 'true' }, verdict === 'pass' ? '✓' : verdict === 'fail' ? '✗' : '?');
}

function cssToken(s) {
  return String(s).replace(/[^A-Za-z0-9_-]/g, '_');
}

/** A selector that finds the same control after a redraw, or null. */
function focusKey(el) {
  const test = el.getAttribute('data-test');
  if (!test) return null;
  const attempt = el.getAttribute('data-attempt');
  const task = el.getAttribute('data-task');
  const item = el.getAttribute('data-item');
  let sel = `[data-test="${test}"]`;
  if (attempt) sel += `[data-attempt="${attempt}"]`;
  if (item) sel += `[data-item="${CSS.escape(item)}"]`;
  if (task) sel += `[data-task="${CSS.escape(task)}"]`;
  return sel;
}
