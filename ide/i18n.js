// i18n.js — English and Japanese strings. Each module registers its own at import time
// (register({en: {...}, ja: {...}})); t('key', {name}) fills {name} placeholders. The
// words several modules share (task states, execution states, common verbs) are here,
// and what an open question does to the tasks (question.*, under each question the chat
// asks): the orchestrator's rule, worded from held() and resolve_backlog in
// src/multiverse/orchestrator, not from what a reader might expect.

const dicts = { en: {}, ja: {} };
const listeners = new Set();

export const LOCALES = ['en', 'ja'];
export let locale = 'en';

export function register(more) {
  for (const [l, entries] of Object.entries(more)) {
    dicts[l] = Object.assign(dicts[l] || {}, entries);
  }
}

// A key missing in the current locale falls back to English, then to the key itself,
// so a forgotten translation shows up as readable English rather than a blank.
export function t(key, vars) {
  let text = dicts[locale]?.[key] ?? dicts.en[key] ?? key;
  if (vars) {
    text = text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  }
  return text;
}

export function has(key) {
  return key in dicts.en || key in (dicts[locale] || {});
}

export function setLocale(l) {
  const next = LOCALES.includes(l) ? l : 'en';
  // No document under node --test, where the strings are tested.
  const root = globalThis.document?.documentElement;
  if (next === locale && (!root || root.lang === next)) return;
  locale = next;
  if (root) root.lang = next;
  for (const fn of listeners) fn(next);
}

// Called after each locale change (the shell re-renders what it shows).
export function onLocale(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// Dates and durations in the locale's way.
export function formatTime(ms) {
  if (ms === null || ms === undefined) return '';
  return new Date(ms).toLocaleString(locale === 'ja' ? 'ja-JP' : 'en-GB', {
    dateStyle: 'short',
    timeStyle: 'medium',
  });
}

export function formatDuration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return t('time.seconds', { n: s });
  const m = Math.floor(s / 60);
  if (m < 60) return t('time.minutes', { m, s: s % 60 });
  return t('time.hours', { h: Math.floor(m / 60), m: m % 60 });
}

register({
  en: {
    'state.PENDING': 'Pending',
    'state.BLOCKED': 'Blocked',
    'state.READY': 'Ready',
    'state.RUNNING': 'Running',
    'state.RETRY_WAIT': 'Waiting to retry',
    'state.SUCCEEDED': 'Succeeded',
    'state.FAILED': 'Failed',
    'state.CANCELED': 'Canceled',
    'exec.RUNNING': 'Running',
    'exec.PAUSED': 'Paused',
    'exec.IDLE': 'Idle',
    'common.close': 'Close',
    'question.holds': 'Until this is answered, {tasks} will not start; tasks it does not name run as usual. Your answer is added to the description of {first}.',
    'question.holdsNone': 'This question holds back no task: the tasks run as usual while it is open. Your answer is kept with it in the backlog.',
    'question.own': 'Task {task} stopped to ask this and will not start again until it is answered. Answering adds your answer to its description and lets it start again with fresh attempts.',
    'common.unavailable': 'This view is not available: {name} could not be loaded ({error}).',
    'time.seconds': '{n} s',
    'time.minutes': '{m} min {s} s',
    'time.hours': '{h} h {m} min',
  },
  ja: {
    'state.PENDING': '待機中',
    'state.BLOCKED': 'ブロック',
    'state.READY': '実行可能',
    'state.RUNNING': '実行中',
    'state.RETRY_WAIT': '再試行待ち',
    'state.SUCCEEDED': '成功',
    'state.FAILED': '失敗',
    'state.CANCELED': 'キャンセル',
    'exec.RUNNING': '実行中',
    'exec.PAUSED': '一時停止中',
    'exec.IDLE': '停止中',
    'common.close': '閉じる',
    'question.holds': '回答されるまで {tasks} は開始されません。この質問が挙げていないタスクは通常どおり実行されます。回答は {first} の説明に追記されます。',
    'question.holdsNone': 'この質問はどのタスクも止めません。未回答の間もタスクは通常どおり実行されます。回答は質問とともにバックログに残ります。',
    'question.own': 'タスク {task} はこの質問のために止まっており、回答されるまで再開しません。回答するとその説明に追記され、タスクは新しい試行で再び開始できるようになります。',
    'common.unavailable': 'この画面は利用できません: {name} を読み込めませんでした（{error}）。',
    'time.seconds': '{n} 秒',
    'time.minutes': '{m} 分 {s} 秒',
    'time.hours': '{h} 時間 {m} 分',
  },
});
