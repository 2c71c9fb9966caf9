// i18n.js — the IDE's words, and the only reader of its translations: one table per
// language in locales/ (en.js, ja.js: key → text, the same keys in each). English is
// imported with this module and is the fallback; another language's table is imported
// when the page switches to it, so a page loads the languages it shows and no view
// holds strings of its own. t('key', {name}) fills {name} placeholders. Dates and
// durations in the locale's way are here too.

import en from './locales/en.js';

export const LOCALES = ['en', 'ja'];
export let locale = 'en';

const dicts = { en: { ...en } };
const ready = new Set(['en']); // the locales whose table is loaded
const loading = new Map(); // locale → the import of its table, once asked for
const listeners = new Set();
let wanted = 'en'; // the locale asked for last: an earlier request that loads later loses

// More strings for a locale (tests; the IDE's own are in locales/).
export function register(more) {
  for (const [l, entries] of Object.entries(more)) {
    dicts[l] = Object.assign(dicts[l] || {}, entries);
  }
}

// A locale's table, imported once; a failed import is tried again next time.
function load(l) {
  if (!loading.has(l)) {
    const table = import(`./locales/${l}.js`).then(
      (m) => {
        dicts[l] = Object.assign({}, m.default, dicts[l]);
        ready.add(l);
      },
      (e) => {
        loading.delete(l);
        throw e;
      },
    );
    loading.set(l, table);
  }
  return loading.get(l);
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

// Switches to locale `l` (English when it is none of LOCALES) once its table is loaded,
// then tells the listeners; resolves when done. A locale already loaded switches before
// this returns; one that cannot be loaded leaves the page in the language it shows.
export async function setLocale(l) {
  const next = LOCALES.includes(l) ? l : 'en';
  wanted = next;
  if (!ready.has(next)) {
    try {
      await load(next);
    } catch (e) {
      console.error(`locales/${next}.js:`, e);
      return;
    }
    if (wanted !== next) return;
  }
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

