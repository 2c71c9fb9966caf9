// task/criteria.js — the task's acceptance criteria, each with the verdict of its last
// finished attempt's result JSON, and what the run checked beyond them. `p` is the
// panel (task.js): {state}.

import { h } from '../dom.js';
import { t } from '../i18n.js';
import { lastFinished } from './attempts.js';

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

/** The criteria with their verdicts, what else the run checked, and whose verdicts. */
export function criteriaBlock(p, design, task) {
  const last = lastFinished(task.attempts);
  const result = last ? p.state.results.get(last.number) : undefined;
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

function verdictMark(verdict) {
  return h('span', { class: 'tp-mark', 'aria-hidden': 'true' }, verdict === 'pass' ? '✓' : verdict === 'fail' ? '✗' : '?');
}
