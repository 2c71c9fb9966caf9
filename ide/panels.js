// panels.js — what the panel modules (task, chat, backlog, settings, processes,
// workspaces) share: times and durations from the API's RFC 3339
// strings, an API error in words, a one-second clock for countdowns, and a guard that
// runs a refetch once more when asked again while it runs (events come in bursts).

import { h } from './dom.js';

export { coalesce } from './api.js';
import { t, locale, formatDuration } from './i18n.js';
import { markdown } from './lib/markdown/markdown.js';

/** Milliseconds since the epoch of an RFC 3339 string (or a number), else null. */
export function toMs(value) {
  if (value === null || value === undefined || value === '') return null;
  if (typeof value === 'number') return value;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

/** A date and time in the locale's way, or a dash. */
export function when(value) {
  const ms = toMs(value);
  if (ms === null) return t('panels.never');
  return new Date(ms).toLocaleString(locale === 'ja' ? 'ja-JP' : 'en-GB', {
    dateStyle: 'medium',
    timeStyle: 'medium',
  });
}

/** A <time> element: the date, with the machine-readable value. */
export function timeEl(value, cls = 'mv-time') {
  const ms = toMs(value);
  if (ms === null) return h('span', { class: cls }, t('panels.never'));
  return h('time', { class: cls, datetime: new Date(ms).toISOString(), title: new Date(ms).toISOString() }, when(ms));
}

/** How long ago, in words ("3 min ago"). */
export function ago(value, now = Date.now()) {
  const ms = toMs(value);
  if (ms === null) return t('panels.never');
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 5) return t('panels.ago.now');
  if (s < 60) return t('panels.ago.s', { n: s });
  if (s < 3600) return t('panels.ago.m', { n: Math.floor(s / 60) });
  if (s < 86400) return t('panels.ago.h', { n: Math.floor(s / 3600) });
  return t('panels.ago.d', { n: Math.floor(s / 86400) });
}

/** The time from `start` to `end` (or now), in words; '' without a start. */
export function duration(start, end, now = Date.now()) {
  const a = toMs(start);
  if (a === null) return '';
  const b = toMs(end) ?? now;
  return formatDuration(Math.max(0, b - a));
}

/** An API error (ApiError {status, key, message}) or any error, in one line. */
export function errorText(e) {
  if (!e) return '';
  if (e.key && e.message && e.message !== e.key) return t('panels.error', { message: e.message, key: e.key });
  return e.message || e.key || String(e);
}

/** Markdown rendered to DOM (never an HTML string), with the cut note localised. */
export function md(text) {
  return markdown(text || '', document, { truncated: (info) => t('md.truncated', info) });
}

/**
 * A clock that calls each registered function once a second while any is registered
 * (countdowns, running durations): a local clock, not polling the daemon.
 */
export function ticker() {
  const fns = new Set();
  let timer = null;
  const tick = () => {
    for (const fn of [...fns]) fn(Date.now());
    if (!fns.size && timer) {
      clearInterval(timer);
      timer = null;
    }
  };
  return {
    add(fn) {
      fns.add(fn);
      fn(Date.now());
      if (!timer) timer = setInterval(tick, 1000);
      return () => fns.delete(fn);
    },
    clear() {
      fns.clear();
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}

/** A state chip: coloured dot and the localised state, `data-state` set. */
export function stateChip(state, attrs = {}) {
  const s = state || 'PENDING';
  return h('span', { class: `state-chip state-${s}`, 'data-state': s, ...attrs }, h('span', { class: 'state-dot', 'aria-hidden': 'true' }), ' ', t(`state.${s}`));
}
