// task/description.js — what the task's design says: its description (Markdown), the
// suggested implementation (language, files, constraints) and its details (pool,
// priority, milestone, phase, node, who created it, when it changed).

import { h } from '../dom.js';
import { t } from '../i18n.js';
import { timeEl, md } from '../panels.js';

/** The description rendered from Markdown, or a word that there is none. */
export function descriptionBlock(design) {
  const box = h('div', { class: 'tp-description', 'data-test': 'task-description' });
  if (design.description && design.description.trim()) box.appendChild(md(design.description));
  else box.appendChild(h('p', { class: 'muted' }, t('task.noDescription')));
  return box;
}

/** The suggested implementation, or null when it says nothing. */
export function suggestedBlock(s) {
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

/** The task's pool, priority, milestone, phase, node, author and last change. */
export function detailsBlock(design, task) {
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
