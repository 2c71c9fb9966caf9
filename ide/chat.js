// chat.js — the floating chat (mountChat): the conversations (newest first, a new one),
// the messages of the one shown, the progress of a turn while `POST /api/chat` is
// pending (the chat turn contract's steps, from `chat` events), the patch a reply made
// (created / updated / moved / deleted tasks as chips that open the task, removed
// dependencies, conflicts) and the questions it opened, each saying which tasks it holds
// back, answered in place (the QUESTION backlog item is resolved with the answer as its
// note; a task's own question also retries it). Ctrl/Cmd+Enter sends.

import { h, clear } from './dom.js';
import { register, t } from './i18n.js';
import { timeEl, errorText, md, ago } from './panels.js';
import { plainText } from './markdown.js';
import { retryByDefault } from './backlog.js';

register({
  en: {
    'chat.conversations': 'Conversations',
    'chat.new': 'New',
    'chat.newHint': 'Start a new conversation',
    'chat.untitled': 'New conversation',
    'chat.input': 'Message to the planner',
    'chat.placeholder': 'Describe what to build, or say status, pause, resume, stop…',
    'chat.send': 'Send',
    'chat.sendHint': 'Send (Ctrl+Enter)',
    'chat.keys': 'Ctrl+Enter to send',
    'chat.emptyTitle': 'Plan by talking',
    'chat.emptyText': 'Say what you want built. The planner turns it into tasks with dependencies; they appear in the plan and start running.',
    'chat.emptyExample': 'Example: "Set up the service in order:\n- add the HTTP handler\n- add its tests\n- document the endpoint"',
    'chat.role.user': 'You',
    'chat.role.assistant': 'Planner',
    'chat.role.system': 'Multiverse',
    'chat.loadFailed': 'Could not load the conversation: {error}',
    'chat.sendFailed': 'The message was not handled: {error}',
    'chat.step.RECEIVED': 'Received',
    'chat.step.PLANNING': 'Planning',
    'chat.step.REPLIED': 'Replied',
    'chat.step.FAILED': 'Failed',
    'chat.step.CANCELED': 'Canceled',
    'chat.step.sent': 'Your message was sent to the daemon.',
    'chat.steps': 'Progress',
    'chat.patch': 'Changes to the plan',
    'chat.created': 'Created',
    'chat.updated': 'Updated',
    'chat.moved': 'Moved',
    'chat.deleted': 'Deleted',
    'chat.removedDeps': 'Dependencies removed',
    'chat.removedDep': '{task} no longer waits for {dependency}',
    'chat.conflicts': 'Possible conflicts',
    'chat.conflict': '{file}: {tasks}',
    'chat.autopilot': 'Execution started (autopilot).',
    'chat.questions': 'Questions for you',
    'chat.answer': 'Answer',
    'chat.answerLabel': 'Your answer to: {question}',
    'chat.answerSubmit': 'Answer',
    'chat.answered': 'Answered: {answer}',
    'chat.answerFailed': 'The answer was not saved: {error}',
    'chat.answerEmpty': 'Write an answer first.',
    'chat.openTask': 'Open task {id}',
  },
  ja: {
    'chat.conversations': '会話',
    'chat.new': '新規',
    'chat.newHint': '新しい会話を始める',
    'chat.untitled': '新しい会話',
    'chat.input': 'プランナーへのメッセージ',
    'chat.placeholder': '作りたいものを書くか、状況・一旦止めて・続けて・止めて…',
    'chat.send': '送信',
    'chat.sendHint': '送信 (Ctrl+Enter)',
    'chat.keys': 'Ctrl+Enter で送信',
    'chat.emptyTitle': '会話で計画する',
    'chat.emptyText': '作りたいものを伝えてください。プランナーが依存関係つきのタスクに分解し、計画に表示して実行を始めます。',
    'chat.emptyExample': '例: 「順番にサービスを用意して:\n- HTTP ハンドラを追加\n- そのテストを追加\n- エンドポイントを文書化」',
    'chat.role.user': 'あなた',
    'chat.role.assistant': 'プランナー',
    'chat.role.system': 'Multiverse',
    'chat.loadFailed': '会話を読み込めませんでした: {error}',
    'chat.sendFailed': 'メッセージを処理できませんでした: {error}',
    'chat.step.RECEIVED': '受信',
    'chat.step.PLANNING': '計画中',
    'chat.step.REPLIED': '返信済み',
    'chat.step.FAILED': '失敗',
    'chat.step.CANCELED': 'キャンセル',
    'chat.step.sent': 'メッセージをデーモンに送りました。',
    'chat.steps': '進行状況',
    'chat.patch': '計画の変更',
    'chat.created': '作成',
    'chat.updated': '更新',
    'chat.moved': '移動',
    'chat.deleted': '削除',
    'chat.removedDeps': '削除された依存関係',
    'chat.removedDep': '{task} は {dependency} を待たなくなりました',
    'chat.conflicts': '衝突の可能性',
    'chat.conflict': '{file}: {tasks}',
    'chat.autopilot': '実行を開始しました（オートパイロット）。',
    'chat.questions': 'あなたへの質問',
    'chat.answer': '回答',
    'chat.answerLabel': '質問への回答: {question}',
    'chat.answerSubmit': '回答する',
    'chat.answered': '回答済み: {answer}',
    'chat.answerFailed': '回答を保存できませんでした: {error}',
    'chat.answerEmpty': '先に回答を書いてください。',
    'chat.openTask': 'タスク {id} を開く',
  },
});

const TERMINAL = new Set(['REPLIED', 'FAILED', 'CANCELED']);

/** The localStorage key of the conversation shown last, per workspace. */
function sessionKey(store) {
  return `mv.chat.session:${(store.workspace && store.workspace.dir) || ''}`;
}

/**
 * The QUESTION backlog items that belong to a conversation: those a turn of it opened
 * (`ids`), and open ones about a task it created (the daemon files a chat question with
 * `task` = its first task and `metadata.holds` = every task it holds back), or, for a
 * chat question that names no task, whose text one of its replies quotes (each reply
 * has a line per question it opened) — so they are found again after a reload.
 */
export function questionsFor(backlog, ids, createdTasks, replies = []) {
  const wanted = new Set(ids || []);
  const created = new Set(createdTasks || []);
  return (backlog || []).filter((item) => {
    if (!item || item.kind !== 'QUESTION') return false;
    if (wanted.has(item.id)) return true;
    if (item.resolved_at) return false;
    const chatQuestion = Boolean(item.metadata && Array.isArray(item.metadata.holds));
    const holds = (chatQuestion ? item.metadata.holds : []).concat(item.task ? [item.task] : []);
    if (holds.some((task) => created.has(task))) return true;
    const text = String(item.description || '').trim();
    return chatQuestion && text !== '' && replies.some((reply) => String(reply).includes(text));
  });
}

/**
 * Mounts the chat into `root` (the shell's chat window body); returns its unmount.
 * ctx: {api, store, openTask, toast}.
 */
export function mountChat(root, ctx) {
  const { api, store } = ctx;
  const state = {
    sessions: [],
    session: readSaved(),
    messages: [],
    loadError: null,
    pending: null, // {message, steps: [{state, message}], session}
    turns: [], // [{session, reply, outcome, steps}] answered in this page
    questionIds: new Set(), // backlog items opened by turns in this page
    answers: new Map(), // item id → {text, busy, error}
    gone: false,
  };

  const sessionsBar = h('div', { class: 'cw-sessions', role: 'group', 'aria-label': t('chat.conversations') });
  const log = h('div', { class: 'cw-log', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions', tabindex: '0' });
  const input = h('textarea', {
    class: 'cw-input',
    'data-test': 'chat-input',
    rows: '3',
    'aria-label': t('chat.input'),
    placeholder: t('chat.placeholder'),
    on: { keydown: onKeydown },
  });
  const send = h('button', { type: 'submit', class: 'btn btn-primary cw-send', 'data-test': 'chat-send', title: t('chat.sendHint') }, t('chat.send'));
  const form = h(
    'form',
    { class: 'cw-form', on: { submit: (e) => { e.preventDefault(); submit(); } } },
    input,
    h('div', { class: 'cw-form-row' }, h('span', { class: 'muted cw-keys' }, t('chat.keys')), send),
  );
  const newButton = h('button', { type: 'button', class: 'btn btn-small cw-new', 'data-test': 'chat-new', title: t('chat.newHint'), on: { click: newSession } }, '+ ', t('chat.new'));
  const top = h('div', { class: 'cw-top' }, newButton, sessionsBar);
  clear(root).appendChild(h('div', { class: 'cw', 'data-test': 'chat' }, top, log, form));

  function readSaved() {
    try {
      return localStorage.getItem(sessionKey(store)) || null;
    } catch {
      return null;
    }
  }

  function save(session) {
    try {
      if (session) localStorage.setItem(sessionKey(store), session);
      else localStorage.removeItem(sessionKey(store));
    } catch {
      // Private mode: the choice lasts for this page.
    }
  }

  function onKeydown(e) {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      submit();
    }
  }

  async function loadSessions() {
    try {
      state.sessions = await api.get('/api/chat');
    } catch (e) {
      state.sessions = [];
      state.loadError = e;
    }
    // A saved conversation that is gone (or none saved): the newest, else a new one.
    if (state.session && !state.sessions.some((s) => s.session === state.session) && !state.pending) {
      state.session = null;
    }
    if (!state.session && !state.pending && state.sessions.length && !state.fresh) {
      state.session = state.sessions[0].session;
    }
    drawSessions();
  }

  async function loadMessages() {
    const session = state.session;
    if (!session) {
      state.messages = [];
      drawLog();
      return;
    }
    try {
      const messages = await api.get(`/api/chat/${encodeURIComponent(session)}`);
      if (session !== state.session) return;
      state.messages = messages;
      state.loadError = null;
    } catch (e) {
      state.loadError = e;
    }
    drawLog();
  }

  function selectSession(session) {
    if (state.pending) return;
    state.session = session;
    state.fresh = false;
    save(session);
    drawSessions();
    loadMessages();
  }

  function newSession() {
    if (state.pending) return;
    state.session = null;
    state.fresh = true;
    state.messages = [];
    save(null);
    drawSessions();
    drawLog();
    input.focus();
  }

  function drawSessions() {
    const chips = state.sessions.map((s) => {
      // The title is the first message as typed, Markdown and all: a tab shows its text.
      const title = plainText(s.title) || t('chat.untitled');
      return h(
        'button',
        {
          type: 'button',
          class: 'cw-session',
          'data-test': 'chat-session',
          'data-session': s.session,
          'aria-current': s.session === state.session ? 'true' : null,
          title: `${title} — ${ago(s.started_at)}`,
          disabled: Boolean(state.pending),
          on: { click: () => selectSession(s.session) },
        },
        title,
      );
    });
    if (!state.session) chips.unshift(h('span', { class: 'cw-session cw-session-new', 'aria-current': 'true' }, t('chat.untitled')));
    sessionsBar.replaceChildren(...chips);
    newButton.disabled = Boolean(state.pending);
  }

  function nearBottom() {
    return log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  }

  function drawLog() {
    const stick = nearBottom();
    // An answer being typed keeps its focus and caret across a redraw.
    const active = document.activeElement;
    const keep = active && log.contains(active) && active.getAttribute('data-test')
      ? { test: active.getAttribute('data-test'), item: active.getAttribute('data-item'), start: active.selectionStart, end: active.selectionEnd }
      : null;
    const items = [];
    if (state.loadError) items.push(h('p', { class: 'error-text cw-error', role: 'alert' }, t('chat.loadFailed', { error: errorText(state.loadError) })));
    const messages = state.messages || [];
    if (!messages.length && !state.pending) items.push(emptyState());
    // Each turn answered in this page is shown after its reply.
    const turnsHere = state.turns.filter((turn) => turn.session === state.session);
    const placed = new Set();
    const created = [];
    messages.forEach((m, k) => {
      items.push(messageEl(m));
      if (m.role !== 'assistant') return;
      const turn = turnsHere.find((x) => !placed.has(x) && x.reply === m.content && isLastWith(messages, k, m.content));
      if (turn) {
        placed.add(turn);
        if (turn.steps.length) items.push(stepsEl(turn.steps));
        const patch = patchEl(turn.outcome);
        if (patch) items.push(patch);
      } else if (m.created_tasks && m.created_tasks.length) {
        items.push(patchEl({ patch: { created: m.created_tasks.map((id) => ({ id })) } }));
      }
      for (const id of m.created_tasks || []) created.push(id);
    });
    // Selecting another conversation is disabled while a turn is pending: it is this one's.
    if (state.pending) {
      items.push(messageEl({ role: 'user', content: state.pending.message, at: null }, true));
      items.push(stepsEl(state.pending.steps, true));
    }
    for (const turn of turnsHere) for (const c of (turn.outcome.patch && turn.outcome.patch.created) || []) created.push(c.id);
    const replies = messages.filter((m) => m.role === 'assistant').map((m) => m.content);
    const questions = questionsFor(store.backlog, [...state.questionIds], created, replies);
    if (questions.length) items.push(questionsEl(questions));
    log.replaceChildren(...items);
    if (keep) {
      const sel = `[data-test="${keep.test}"]` + (keep.item ? `[data-item="${CSS.escape(keep.item)}"]` : '');
      const again = log.querySelector(sel);
      if (again) {
        again.focus({ preventScroll: true });
        if (typeof keep.start === 'number' && again.setSelectionRange) again.setSelectionRange(keep.start, keep.end);
      }
    }
    if (stick || state.pending) log.scrollTop = log.scrollHeight;
  }

  /** Task chips follow their task's state without redrawing the conversation. */
  function recolourChips() {
    for (const el of log.querySelectorAll('button.cw-chip[data-task]')) {
      const row = store.tasks.get(el.getAttribute('data-task'));
      if (row) el.className = `cw-chip state-${row.state || 'PENDING'}`;
    }
  }

  function isLastWith(messages, k, content) {
    for (let j = messages.length - 1; j > k; j--) if (messages[j].role === 'assistant' && messages[j].content === content) return false;
    return true;
  }

  function emptyState() {
    return h('div', { class: 'cw-empty' }, h('h3', {}, t('chat.emptyTitle')), h('p', {}, t('chat.emptyText')), h('p', { class: 'cw-example' }, t('chat.emptyExample')));
  }

  // A message's element, built once per message read: a redraw (every backlog or plan
  // event) moves it instead of parsing its Markdown again.
  const rendered = new WeakMap();

  function messageEl(m, pending = false) {
    if (!pending && rendered.has(m)) return rendered.get(m);
    const el = buildMessage(m, pending);
    if (!pending) rendered.set(m, el);
    return el;
  }

  function buildMessage(m, pending) {
    const role = m.role === 'assistant' || m.role === 'system' ? m.role : 'user';
    const body = role === 'user' ? h('div', { class: 'cw-text' }, m.content) : h('div', { class: 'cw-md' }, md(m.content));
    return h(
      'div',
      { class: `cw-msg cw-${role}${pending ? ' cw-pending' : ''}`, 'data-test': 'chat-message', 'data-role': role },
      h('div', { class: 'cw-meta' }, h('span', { class: 'cw-who' }, t(`chat.role.${role}`)), m.at ? timeEl(m.at, 'cw-at') : null),
      body,
    );
  }

  function stepsEl(steps, live = false) {
    const last = steps[steps.length - 1];
    return h(
      'ol',
      { class: `cw-steps${live ? ' live' : ''}`, 'aria-label': t('chat.steps') },
      ...steps.map((s) =>
        h(
          'li',
          {
            class: `cw-step step-${s.state}${live && s === last && !TERMINAL.has(s.state) ? ' current' : ''}`,
            'data-test': 'chat-step',
            'data-state': s.state,
          },
          h('span', { class: 'cw-step-dot', 'aria-hidden': 'true' }),
          h('strong', {}, t(`chat.step.${s.state}`)),
          s.message ? h('span', { class: 'cw-step-msg', title: s.message }, s.message) : null,
        ),
      ),
    );
  }

  function chip(id, clickable = true) {
    const row = store.tasks.get(id);
    const s = (row && row.state) || null;
    const label = [h('span', { class: 'mono' }, id), row ? h('span', { class: 'cw-chip-title' }, row.title) : null];
    if (!clickable || !row) return h('span', { class: 'cw-chip', 'data-task': id }, ...label);
    return h(
      'button',
      { type: 'button', class: `cw-chip state-${s || 'PENDING'}`, 'data-task': id, title: t('chat.openTask', { id }), on: { click: () => ctx.openTask(id) } },
      h('span', { class: 'state-dot', 'aria-hidden': 'true' }),
      ...label,
    );
  }

  function patchEl(outcome) {
    const p = outcome && outcome.patch;
    if (!p) return null;
    const groups = [];
    const group = (test, key, ids, clickable = true) => {
      if (!ids || !ids.length) return;
      groups.push(h('div', { class: `cw-group cw-${test}`, 'data-test': test }, h('span', { class: 'cw-group-name' }, t(key)), h('span', { class: 'cw-chips' }, ...ids.map((id) => chip(id, clickable)))));
    };
    group('patch-created', 'chat.created', (p.created || []).map((c) => c.id));
    group('patch-updated', 'chat.updated', p.updated);
    group('patch-moved', 'chat.moved', p.moved);
    group('patch-deleted', 'chat.deleted', p.deleted, false);
    if ((p.removed_dependencies || []).length) {
      groups.push(
        h('div', { class: 'cw-group' }, h('span', { class: 'cw-group-name' }, t('chat.removedDeps')), h('ul', { class: 'cw-list' }, ...p.removed_dependencies.map((r) => h('li', {}, t('chat.removedDep', r))))),
      );
    }
    if ((p.conflicts || []).length) {
      groups.push(
        h(
          'div',
          { class: 'cw-group cw-conflicts' },
          h('span', { class: 'cw-group-name' }, t('chat.conflicts')),
          h(
            'ul',
            { class: 'cw-list' },
            ...p.conflicts.map((c) =>
              h('li', { 'data-test': 'patch-conflict', 'data-file': c.file }, h('span', { class: 'mono' }, c.file), ' ', h('span', { class: 'cw-chips' }, ...(c.tasks || []).map((id) => chip(id))), c.reason ? h('span', { class: 'muted' }, ` — ${c.reason}`) : null),
            ),
          ),
        ),
      );
    }
    if (outcome.autopilot) groups.push(h('p', { class: 'cw-autopilot' }, t('chat.autopilot')));
    if (!groups.length) return null;
    return h('div', { class: 'cw-patch', 'data-test': 'chat-patch', 'aria-label': t('chat.patch') }, ...groups);
  }

  function questionsEl(items) {
    return h(
      'div',
      { class: 'cw-questions' },
      h('div', { class: 'cw-group-name' }, t('chat.questions')),
      ...items.map(questionEl),
    );
  }

  function questionEl(item) {
    const answer = state.answers.get(item.id) || { text: '', busy: false, error: null };
    const resolved = Boolean(item.resolved_at);
    const tasks = (item.metadata && Array.isArray(item.metadata.holds) ? item.metadata.holds : item.task ? [item.task] : []);
    const retry = retryByDefault(item);
    const box = h(
      'div',
      { class: `cw-question${resolved ? ' resolved' : ''}`, 'data-test': 'chat-question', 'data-item': item.id, 'data-resolved': String(resolved) },
      h('p', { class: 'cw-q-text' }, item.description || item.title),
      tasks.length ? h('div', { class: 'cw-chips' }, ...tasks.map((id) => chip(id))) : null,
    );
    if (resolved) {
      box.appendChild(h('p', { class: 'cw-answered' }, t('chat.answered', { answer: item.resolution || '' })));
      return box;
    }
    const field = h('input', {
      type: 'text',
      class: 'cw-answer',
      'data-test': 'question-answer',
      'data-item': item.id,
      'aria-label': t('chat.answerLabel', { question: item.description || item.title }),
      placeholder: t('chat.answer'),
      value: answer.text,
      disabled: answer.busy,
      on: {
        input: (e) => state.answers.set(item.id, { ...answer, text: e.target.value, error: null }),
        keydown: (e) => {
          if (e.key === 'Enter') {
            e.preventDefault();
            resolve(item.id);
          }
        },
      },
    });
    const submitButton = h('button', { type: 'button', class: 'btn btn-small btn-primary', 'data-test': 'question-submit', 'data-item': item.id, disabled: answer.busy, on: { click: () => resolve(item.id) } }, t('chat.answerSubmit'));
    box.appendChild(h('p', { class: 'muted cw-small', 'data-test': 'question-effect' }, questionEffect(item, tasks, retry)));
    box.appendChild(h('div', { class: 'cw-answer-row' }, field, submitButton));
    if (answer.error) box.appendChild(h('p', { class: 'error-text cw-small', role: 'alert' }, answer.error));
    return box;
  }

  async function resolve(itemId) {
    const answer = state.answers.get(itemId) || { text: '' };
    const text = (answer.text || '').trim();
    if (!text) {
      state.answers.set(itemId, { ...answer, error: t('chat.answerEmpty') });
      drawLog();
      focusAnswer(itemId);
      return;
    }
    state.answers.set(itemId, { text, busy: true, error: null });
    drawLog();
    try {
      // A task's own question left it BLOCKED until retried; a chat's question only held
      // its tasks back, and they start once it is resolved.
      const item = (store.backlog || []).find((x) => x.id === itemId);
      await api.post(`/api/backlog/${encodeURIComponent(itemId)}/resolve`, { note: text, retry: retryByDefault(item) });
      state.answers.delete(itemId);
      // Shown as answered from now on, not dropped from the conversation.
      state.questionIds.add(itemId);
      // The backlog event refetches the store's list; read it now too, so the answer
      // shows even when the event stream is down.
      if (store.refetchBacklog) await store.refetchBacklog();
    } catch (e) {
      state.answers.set(itemId, { text, busy: false, error: t('chat.answerFailed', { error: errorText(e) }) });
    }
    if (!state.gone) drawLog();
  }

  /**
   * What an open question does to the tasks, as the orchestrator has it: a chat's
   * question keeps the tasks it names from starting (the others run) and its answer goes
   * into the first one's description; a task's own question keeps that task BLOCKED until
   * it is answered, which retries it.
   */
  function questionEffect(item, tasks, retry) {
    if (retry) return t('question.own', { task: item.task });
    if (!tasks.length) return t('question.holdsNone');
    return t('question.holds', { tasks: tasks.join(', '), first: tasks[0] });
  }

  function focusAnswer(itemId) {
    const el = log.querySelector(`[data-test=question-answer][data-item="${CSS.escape(itemId)}"]`);
    if (el) el.focus();
  }

  async function submit() {
    const message = input.value.trim();
    if (!message || state.pending) return;
    const session = state.session;
    // Events of this conversation now belong to the new turn.
    for (const turn of state.turns) if (turn.session === session) turn.done = true;
    state.pending = { message, session: session || undefined, steps: [{ state: 'RECEIVED', message: t('chat.step.sent') }] };
    setBusy(true);
    drawSessions();
    drawLog();
    let outcome = null;
    try {
      outcome = await api.post('/api/chat', session ? { message, session } : { message });
      input.value = '';
    } catch (e) {
      ctx.toast(t('chat.sendFailed', { error: errorText(e) }), 'error');
    }
    const steps = state.pending.steps;
    state.pending = null;
    setBusy(false);
    if (state.gone) return;
    if (outcome) {
      state.fresh = false;
      state.session = outcome.session;
      save(outcome.session);
      // The final step, when its event has not come (yet): the answer says it.
      const ended = steps.some((s) => TERMINAL.has(s.state));
      if (!ended && outcome.state) steps.push({ state: outcome.state, message: null });
      state.turns.push({ session: outcome.session, reply: outcome.reply, outcome, steps, done: ended });
      for (const id of outcome.questions || []) state.questionIds.add(id);
      if (outcome.questions && outcome.questions.length && store.refetchBacklog) store.refetchBacklog().catch(() => {});
    }
    await Promise.all([loadSessions(), loadMessages()]);
    input.focus();
  }

  function setBusy(busy) {
    send.disabled = busy;
    input.readOnly = busy;
    input.setAttribute('aria-busy', String(busy));
    form.classList.toggle('busy', busy);
  }

  function onChatEvent(d) {
    if (!d || !d.state) return;
    const pending = state.pending;
    if (pending) {
      // A new conversation learns its id from its first event.
      if (pending.session === undefined && !state.sessions.some((s) => s.session === d.session)) pending.session = d.session;
      if (d.session === pending.session) {
        pending.steps.push({ state: d.state, message: d.message || null });
        drawLog();
        return;
      }
    }
    // A step of a turn that already answered here (its event came after the answer):
    // it takes the place of the step the answer stood in for.
    const turn = state.turns.find((x) => x.session === d.session && !x.done);
    if (turn) {
      const k = turn.steps.findIndex((s) => s.state === d.state && !s.message);
      if (k >= 0) turn.steps[k] = { state: d.state, message: d.message || null };
      else turn.steps.push({ state: d.state, message: d.message || null });
      if (TERMINAL.has(d.state)) turn.done = true;
      drawLog();
      return;
    }
    // A turn of the conversation shown, sent from elsewhere (another tab, the CLI).
    if (d.finished && d.session === state.session && !state.pending) {
      loadMessages();
      loadSessions();
    }
  }

  const offs = [
    store.on('chat', onChatEvent),
    store.on('backlog', () => drawLog()),
    store.on('task', recolourChips),
    // New tasks (a patch applied): chips of unknown tasks become links.
    store.on('tasks', () => drawLog()),
  ];
  drawSessions();
  drawLog();
  loadSessions().then(() => loadMessages());
  return () => {
    state.gone = true;
    offs.forEach((off) => off());
  };
}
