// Markdown for the IDE (Task Notes, task descriptions): a parser to a plain tree and a
// renderer of that tree to DOM nodes. Never an HTML string: the page's CSP requires
// Trusted Types, and a note is written by an agent, so it is untrusted input.
//
// Supported: ATX and setext headings, paragraphs, emphasis, strong, ~~strike~~, code
// spans, fenced and indented code, block quotes, bullet / ordered / task lists (nested),
// GFM tables, thematic breaks, hard breaks, inline links and <autolinks> and bare
// http(s) URLs. Links keep only http, https and mailto targets; any other (javascript:,
// data:, relative paths) is shown as text. Raw HTML is shown as text, with one
// exception built from whitelisted nodes only: a `<details><summary>S</summary>` line
// up to a `</details>` line (the Task Note template folds long output that way) becomes
// a <details> element whose summary is plain text.
//
// Time is linear in the input: no backtracking regular expressions (every regex here is
// anchored and cannot backtrack more than a bounded amount), code spans are matched by
// a forward-only table of backtick runs, brackets by one stack pass, emphasis by the
// CommonMark delimiter algorithm with its "openers bottom" bound, nesting is capped
// (MAX_DEPTH) and link destinations and titles are bounded. Input over MAX_INPUT is cut
// and the tree says so (`truncated`).
//
// A library of its own (ide/lib/markdown/): inlines are parsed by inline.js, and neither
// module imports anything of the IDE's or touches the DOM at import, so `node --test`
// runs the parser without one.

import { parseInline, safeHref } from './inline.js';

export { parseInline, safeHref };

/** Characters parsed at most; the rest is cut and said. */
export const MAX_INPUT = 1 << 20;
/** Block nesting (quotes, lists, details) parsed at most; deeper markers are text. */
export const MAX_DEPTH = 16;
const MAX_COLUMNS = 128;

// ---------------------------------------------------------------------------
// Blocks

/**
 * Parses Markdown text into a tree:
 * `{type: 'document', children: [block], truncated?: {shown, total}}`.
 * Blocks: heading {level, children}, paragraph {children}, code {lang, text},
 * blockquote {children}, list {ordered, start, tight, items: [{checked, children}]},
 * table {align, head: [cell], rows: [[cell]]} (a cell is an array of inlines),
 * hr, details {summary, children}.
 * Inlines: text {text}, codespan {text}, em / strong / del {children},
 * link {href, title, children}, break.
 */
export function parse(text) {
  let source = typeof text === 'string' ? text : String(text ?? '');
  const total = source.length;
  let truncated = null;
  if (total > MAX_INPUT) {
    // Do not cut a surrogate pair in half.
    let cut = MAX_INPUT;
    const code = source.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
    source = source.slice(0, cut);
    truncated = { shown: cut, total };
  }
  source = source.replace(/\0/g, '\ufffd');
  const lines = source.split(/\r\n|\r|\n/).map(expandLeadingTabs);
  const doc = { type: 'document', children: parseBlocks(lines, 0) };
  if (truncated) doc.truncated = truncated;
  return doc;
}

/** Tabs in a line's leading whitespace become spaces (tab stops of 4). */
function expandLeadingTabs(line) {
  if (line.indexOf('\t') < 0) return line;
  let out = '';
  let i = 0;
  for (; i < line.length; i++) {
    const c = line[i];
    if (c === ' ') out += ' ';
    else if (c === '\t') out += ' '.repeat(4 - (out.length % 4));
    else break;
  }
  return out + line.slice(i);
}

function indentOf(line) {
  let i = 0;
  while (i < line.length && line.charCodeAt(i) === 32) i++;
  return i;
}

function isBlank(line) {
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c !== 32 && c !== 9) return false;
  }
  return true;
}

const FENCE = /^(`{3,}|~{3,})/;

function fenceOf(s) {
  const m = FENCE.exec(s);
  if (!m) return null;
  const info = s.slice(m[1].length).trim();
  // A backtick fence's info string may not contain a backtick.
  if (m[1][0] === '`' && info.indexOf('`') >= 0) return null;
  return { char: m[1][0], length: m[1].length, info };
}

function isClosingFence(s, fence) {
  let n = 0;
  while (n < s.length && s[n] === fence.char) n++;
  return n >= fence.length && isBlank(s.slice(n));
}

/** `#`..`######` then a space or the end: {level, text}; trailing #s dropped. */
function headingOf(s) {
  let level = 0;
  while (level < s.length && s[level] === '#') level++;
  if (level < 1 || level > 6) return null;
  if (level < s.length && s[level] !== ' ' && s[level] !== '\t') return null;
  let body = s.slice(level).trim();
  // A closing sequence of #s, preceded by a space (or alone), is not content.
  let end = body.length;
  while (end > 0 && body[end - 1] === '#') end--;
  if (end === 0) body = '';
  else if (end < body.length && (body[end - 1] === ' ' || body[end - 1] === '\t')) {
    body = body.slice(0, end).trimEnd();
  }
  return { level, text: body };
}

function isThematicBreak(s) {
  const c = s[0];
  if (c !== '-' && c !== '*' && c !== '_') return false;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const d = s[i];
    if (d === c) n++;
    else if (d !== ' ' && d !== '\t') return false;
  }
  return n >= 3;
}

/** `===` or `---` under a paragraph: 1 or 2. */
function setextLevel(s) {
  const c = s[0];
  if (c !== '=' && c !== '-') return 0;
  let i = 0;
  while (i < s.length && s[i] === c) i++;
  if (!isBlank(s.slice(i))) return 0;
  return c === '=' ? 1 : 2;
}

const BULLET = /^[-+*](?=[ \t]|$)/;
const ORDERED = /^(\d{1,9})([.)])(?=[ \t]|$)/;

/**
 * A list item's marker at the start of `s` (already without its indent < 4):
 * {ordered, char, start, width (marker and spaces), empty}.
 */
function listMarkerOf(s) {
  let m = BULLET.exec(s);
  let ordered = false;
  if (!m) {
    m = ORDERED.exec(s);
    ordered = Boolean(m);
  }
  if (!m) return null;
  const marker = m[0];
  const rest = s.slice(marker.length);
  const empty = isBlank(rest);
  let spaces = 0;
  while (spaces < rest.length && (rest[spaces] === ' ' || rest[spaces] === '\t')) spaces++;
  // Five spaces or more: one belongs to the marker, the rest make indented code.
  if (empty || spaces > 4) spaces = 1;
  return {
    ordered,
    char: ordered ? m[2] : marker,
    start: ordered ? Number(m[1]) : 1,
    width: marker.length + spaces,
    empty,
  };
}

/**
 * `<details>` or `<details><summary>S</summary>` alone on a (trimmed) line: the
 * summary's text ('' without one), else null.
 */
function detailsOpen(t) {
  if (t.length < 9 || t.slice(0, 9).toLowerCase() !== '<details>') return null;
  const rest = t.slice(9).trim();
  if (rest === '') return '';
  const lower = rest.toLowerCase();
  if (lower.startsWith('<summary>') && lower.endsWith('</summary>') && rest.length >= 19) {
    return rest.slice(9, -10).trim();
  }
  return null;
}

function isDetailsClose(t) {
  return t.length === 10 && t.toLowerCase() === '</details>';
}

/**
 * For each `<details>` line of `lines`, the line of its `</details>` (fences and nested
 * pairs respected), in one pass; an unclosed one has none and is shown as text.
 */
function matchDetails(lines) {
  const match = new Map();
  const stack = [];
  let fence = null;
  for (let j = 0; j < lines.length; j++) {
    const line = lines[j];
    const ind = indentOf(line);
    if (fence) {
      if (ind < 4 && isClosingFence(line.slice(ind), fence)) fence = null;
      continue;
    }
    if (ind >= 4) continue;
    const opened = fenceOf(line.slice(ind));
    if (opened) {
      fence = opened;
      continue;
    }
    const t = line.trim();
    if (detailsOpen(t) !== null) stack.push(j);
    else if (isDetailsClose(t) && stack.length) match.set(stack.pop(), j);
  }
  return match;
}

/** Cells of a table row: split on `|` not escaped; outer pipes dropped. */
function splitRow(s) {
  let line = s.trim();
  if (line.startsWith('|')) line = line.slice(1);
  if (line.endsWith('|') && !line.endsWith('\\|')) line = line.slice(0, -1);
  const cells = [];
  let cell = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '\\' && line[i + 1] === '|') {
      cell += '|';
      i++;
    } else if (c === '|') {
      cells.push(cell.trim());
      cell = '';
      if (cells.length > MAX_COLUMNS) return cells;
    } else {
      cell += c;
    }
  }
  cells.push(cell.trim());
  return cells;
}

/** A delimiter row's alignments (`:--`, `:-:`, `--:`), or null. */
function delimiterRow(s) {
  if (s.indexOf('-') < 0) return null;
  const t = s.trim();
  if (t.indexOf('|') < 0 && !/^:?-+:?$/.test(t)) return null;
  const cells = splitRow(s);
  if (cells.length > MAX_COLUMNS) return null;
  const align = [];
  for (const cell of cells) {
    if (!/^:?-+:?$/.test(cell)) return null;
    const left = cell.startsWith(':');
    const right = cell.endsWith(':');
    align.push(left && right ? 'center' : right ? 'right' : left ? 'left' : null);
  }
  return align;
}

/** Whether line `i` starts a table: a row with pipes, then a delimiter row as wide. */
function tableAt(lines, i) {
  const head = lines[i];
  if (head.indexOf('|') < 0 || i + 1 >= lines.length) return null;
  if (indentOf(head) >= 4 || indentOf(lines[i + 1]) >= 4) return null;
  const align = delimiterRow(lines[i + 1]);
  if (!align) return null;
  const cells = splitRow(head);
  if (cells.length !== align.length) return null;
  return { align, cells };
}

/** Whether a (non-blank, indent < 4) line starts a block that ends a paragraph. */
function interruptsParagraph(lines, i, depth) {
  const line = lines[i];
  const s = line.slice(indentOf(line));
  if (fenceOf(s) || headingOf(s) || isThematicBreak(s)) return true;
  if (s[0] === '>' && depth < MAX_DEPTH) return true;
  if (depth < MAX_DEPTH && detailsOpen(s.trim()) !== null && detailsAt(lines, i) >= 0) return true;
  const marker = depth < MAX_DEPTH ? listMarkerOf(s) : null;
  // As in CommonMark, only a non-empty item, and an ordered one only from 1, interrupts.
  if (marker && !marker.empty && (!marker.ordered || marker.start === 1)) return true;
  return Boolean(tableAt(lines, i));
}

const detailsCache = new WeakMap();

/** The line closing the `<details>` at line `i` of `lines`, or -1. */
function detailsAt(lines, i) {
  let match = detailsCache.get(lines);
  if (!match) {
    match = matchDetails(lines);
    detailsCache.set(lines, match);
  }
  const end = match.get(i);
  return end === undefined ? -1 : end;
}

/** Parses `lines` into blocks; `depth` is how deep in quotes, lists and details. */
function parseBlocks(lines, depth) {
  const blocks = [];
  let para = null;
  const flush = () => {
    if (para) {
      blocks.push({ type: 'paragraph', children: parseInline(para.join('\n').trim()) });
      para = null;
    }
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      flush();
      i++;
      continue;
    }
    const indent = indentOf(line);
    if (indent >= 4) {
      if (para) {
        para.push(line.trim());
        i++;
        continue;
      }
      i = indentedCode(lines, i, blocks);
      continue;
    }
    const s = line.slice(indent);
    if (para) {
      const level = setextLevel(s);
      if (level) {
        blocks.push({ type: 'heading', level, children: parseInline(para.join('\n').trim()) });
        para = null;
        i++;
        continue;
      }
      if (!interruptsParagraph(lines, i, depth)) {
        para.push(s);
        i++;
        continue;
      }
      flush();
    }
    const fence = fenceOf(s);
    if (fence) {
      i = fencedCode(lines, i, indent, fence, blocks);
      continue;
    }
    const heading = headingOf(s);
    if (heading) {
      blocks.push({ type: 'heading', level: heading.level, children: parseInline(heading.text) });
      i++;
      continue;
    }
    if (isThematicBreak(s)) {
      blocks.push({ type: 'hr' });
      i++;
      continue;
    }
    if (depth < MAX_DEPTH) {
      if (s[0] === '>') {
        i = blockquote(lines, i, depth, blocks);
        continue;
      }
      if (detailsOpen(s.trim()) !== null && detailsAt(lines, i) >= 0) {
        i = details(lines, i, depth, blocks);
        continue;
      }
      const marker = listMarkerOf(s);
      if (marker) {
        i = list(lines, i, depth, blocks);
        continue;
      }
    }
    const table = tableAt(lines, i);
    if (table) {
      i = tableBlock(lines, i, table, blocks);
      continue;
    }
    para = [s];
    i++;
  }
  flush();
  return blocks;
}

function indentedCode(lines, i, blocks) {
  const body = [];
  let j = i;
  while (j < lines.length && (isBlank(lines[j]) || indentOf(lines[j]) >= 4)) {
    body.push(lines[j].slice(Math.min(4, indentOf(lines[j]))));
    j++;
  }
  while (body.length && isBlank(body[body.length - 1])) body.pop();
  blocks.push({ type: 'code', lang: '', text: body.join('\n') });
  return i + body.length;
}

function fencedCode(lines, i, indent, fence, blocks) {
  const body = [];
  let j = i + 1;
  for (; j < lines.length; j++) {
    const line = lines[j];
    const ind = indentOf(line);
    if (ind < 4 && isClosingFence(line.slice(ind), fence)) break;
    // Content loses as much indentation as the opening fence had.
    body.push(line.slice(Math.min(ind, indent)));
  }
  const lang = fence.info.split(/\s/, 1)[0] || '';
  blocks.push({ type: 'code', lang, text: body.join('\n') });
  return j + 1; // past the closing fence (or the end: an unclosed fence runs to it)
}

function blockquote(lines, i, depth, blocks) {
  const inner = [];
  let j = i;
  while (j < lines.length) {
    const line = lines[j];
    const ind = indentOf(line);
    if (ind < 4 && line[ind] === '>') {
      let rest = line.slice(ind + 1);
      if (rest[0] === ' ') rest = rest.slice(1);
      inner.push(rest);
      j++;
      continue;
    }
    // A lazy continuation: paragraph text that goes on without its `>`.
    const last = inner[inner.length - 1];
    if (!isBlank(line) && last !== undefined && !isBlank(last) && ind < 4 &&
        !interruptsParagraph(lines, j, depth)) {
      inner.push(line.slice(ind));
      j++;
      continue;
    }
    break;
  }
  blocks.push({ type: 'blockquote', children: parseBlocks(inner, depth + 1) });
  return j;
}

function details(lines, i, depth, blocks) {
  const summary = detailsOpen(lines[i].trim());
  const end = detailsAt(lines, i);
  blocks.push({
    type: 'details',
    // Plain text: the summary is not parsed, so it can hold no markup at all.
    summary: [{ type: 'text', text: summary || 'Details' }],
    children: parseBlocks(lines.slice(i + 1, end), depth + 1),
  });
  return end + 1;
}

function tableBlock(lines, i, table, blocks) {
  const width = table.align.length;
  const fit = (cells) => {
    const row = cells.slice(0, width);
    while (row.length < width) row.push('');
    return row.map((c) => parseInline(c));
  };
  const rows = [];
  let j = i + 2;
  for (; j < lines.length; j++) {
    const line = lines[j];
    if (isBlank(line) || indentOf(line) >= 4) break;
    const s = line.slice(indentOf(line));
    if (fenceOf(s) || headingOf(s) || isThematicBreak(s) || s[0] === '>') break;
    rows.push(fit(splitRow(line)));
  }
  blocks.push({ type: 'table', align: table.align, head: fit(table.cells), rows });
  return j;
}

function list(lines, i, depth, blocks) {
  const first = listMarkerOf(lines[i].slice(indentOf(lines[i])));
  const node = { type: 'list', ordered: first.ordered, start: first.start, tight: true, items: [] };
  let j = i;
  let blankBetween = false;
  while (j < lines.length) {
    const line = lines[j];
    const ind = indentOf(line);
    if (ind >= 4) break;
    const marker = listMarkerOf(line.slice(ind));
    if (!marker || marker.ordered !== first.ordered || marker.char !== first.char) break;
    if (node.items.length && blankBetween) node.tight = false;
    const contentIndent = ind + marker.width;
    const body = [marker.empty ? '' : line.slice(contentIndent)];
    j++;
    let trailingBlanks = 0;
    while (j < lines.length) {
      const next = lines[j];
      if (isBlank(next)) {
        // An empty item ends at its first blank line.
        if (body.length === 1 && body[0] === '') break;
        body.push('');
        trailingBlanks++;
        j++;
        continue;
      }
      const nind = indentOf(next);
      if (nind >= contentIndent) {
        // A blank line between two blocks of an item makes the list loose.
        if (trailingBlanks && hasContent(body)) node.tight = false;
        body.push(next.slice(contentIndent));
        trailingBlanks = 0;
        j++;
        continue;
      }
      // Lazy continuation of the item's last paragraph.
      if (!trailingBlanks && !isBlank(body[body.length - 1]) && nind < 4 &&
          !listMarkerOf(next.slice(nind)) && !interruptsParagraph(lines, j, depth)) {
        body.push(next.slice(nind));
        j++;
        continue;
      }
      break;
    }
    // Blank lines at an item's end belong between the items, not in it.
    blankBetween = trailingBlanks > 0;
    body.length -= trailingBlanks;
    node.items.push(listItem(body, depth));
  }
  blocks.push(node);
  return j;
}

function hasContent(body) {
  for (const line of body) if (!isBlank(line)) return true;
  return false;
}

const TASK_BOX = /^\[([ xX])\](?: +|$)/;

function listItem(body, depth) {
  let checked = null;
  const box = TASK_BOX.exec(body[0]);
  if (box) {
    checked = box[1] !== ' ';
    body = [body[0].slice(box[0].length), ...body.slice(1)];
  }
  return { checked, children: parseBlocks(body, depth + 1) };
}

// ---------------------------------------------------------------------------
// DOM

/**
 * Renders a tree from `parse` into a `<div class="md">` of `doc` (a Document).
 * `options.truncated(info)` words the note shown when the input was cut.
 */
export function render(tree, doc, options = {}) {
  const root = doc.createElement('div');
  root.className = 'md';
  for (const block of tree.children || []) root.appendChild(renderBlock(block, doc));
  if (tree.truncated) {
    const note = doc.createElement('p');
    note.className = 'md-truncated';
    const words = options.truncated ||
      ((info) => `The text was cut: ${info.shown} of ${info.total} characters are shown.`);
    note.textContent = words(tree.truncated);
    root.appendChild(note);
  }
  return root;
}

/** Parses and renders in one step. */
export function markdown(text, doc, options) {
  return render(parse(text), doc, options);
}

/**
 * What a reader of Markdown `text` sees, as one line of plain text: the syntax gone (no
 * `#`, list markers, `**`, backticks, link targets), blocks, list items and table rows
 * joined by " · ", whitespace collapsed. For a label made of someone's Markdown (a chat
 * conversation's title is its first message), where rendered blocks would not fit.
 */
export function plainText(text) {
  const parts = [];
  const inline = (nodes) =>
    nodes.map((n) => (n.type === 'break' ? ' ' : n.children ? inline(n.children) : n.text || '')).join('');
  const block = (b) => {
    switch (b.type) {
      case 'heading':
      case 'paragraph':
        parts.push(inline(b.children));
        break;
      case 'code':
        parts.push(b.text);
        break;
      case 'blockquote':
        b.children.forEach(block);
        break;
      case 'list':
        for (const item of b.items) item.children.forEach(block);
        break;
      case 'table':
        for (const row of [b.head, ...b.rows]) parts.push(row.map(inline).join(' '));
        break;
      case 'details':
        parts.push(inline(b.summary));
        b.children.forEach(block);
        break;
      default: // hr: nothing to read
    }
  };
  parse(text).children.forEach(block);
  return parts
    .map((p) => p.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .join(' · ');
}

function el(doc, tag, children) {
  const node = doc.createElement(tag);
  for (const child of children || []) node.appendChild(child);
  return node;
}

function renderBlock(block, doc) {
  switch (block.type) {
    case 'heading':
      return el(doc, `h${block.level}`, renderInlines(block.children, doc));
    case 'paragraph':
      return el(doc, 'p', renderInlines(block.children, doc));
    case 'code': {
      const code = doc.createElement('code');
      const lang = /^[A-Za-z0-9_+-]{1,32}$/.test(block.lang) ? block.lang : '';
      if (lang) code.className = `language-${lang}`;
      code.textContent = block.text;
      return el(doc, 'pre', [code]);
    }
    case 'blockquote':
      return el(doc, 'blockquote', block.children.map((b) => renderBlock(b, doc)));
    case 'hr':
      return doc.createElement('hr');
    case 'list': {
      const list = doc.createElement(block.ordered ? 'ol' : 'ul');
      if (block.ordered && block.start !== 1) list.setAttribute('start', String(block.start));
      if (!block.tight) list.className = 'md-loose';
      for (const item of block.items) list.appendChild(renderItem(item, block.tight, doc));
      return list;
    }
    case 'table':
      return renderTable(block, doc);
    case 'details': {
      const summary = el(doc, 'summary', renderInlines(block.summary, doc));
      return el(doc, 'details', [summary, ...block.children.map((b) => renderBlock(b, doc))]);
    }
    default: {
      const p = doc.createElement('p');
      p.textContent = '';
      return p;
    }
  }
}

function renderItem(item, tight, doc) {
  const li = doc.createElement('li');
  if (item.checked !== null) {
    li.className = 'md-task';
    const box = doc.createElement('input');
    box.setAttribute('type', 'checkbox');
    box.setAttribute('disabled', '');
    box.setAttribute('aria-label', item.checked ? 'done' : 'not done');
    if (item.checked) box.setAttribute('checked', '');
    li.appendChild(box);
  }
  for (const block of item.children) {
    // A tight list's paragraphs are its items' text, without <p> spacing.
    if (tight && block.type === 'paragraph') {
      for (const node of renderInlines(block.children, doc)) li.appendChild(node);
    } else {
      li.appendChild(renderBlock(block, doc));
    }
  }
  return li;
}

function renderTable(block, doc) {
  const cell = (tag, inlines, k) => {
    const node = el(doc, tag, renderInlines(inlines, doc));
    if (block.align[k]) node.style.textAlign = block.align[k];
    return node;
  };
  const head = el(doc, 'tr', block.head.map((c, k) => cell('th', c, k)));
  const body = block.rows.map((row) => el(doc, 'tr', row.map((c, k) => cell('td', c, k))));
  const table = el(doc, 'table', [el(doc, 'thead', [head]), el(doc, 'tbody', body)]);
  // A wide table scrolls inside its own box instead of widening the panel.
  const wrap = el(doc, 'div', [table]);
  wrap.className = 'md-table';
  return wrap;
}

function renderInlines(nodes, doc) {
  return nodes.map((node) => renderInline(node, doc));
}

function renderInline(node, doc) {
  switch (node.type) {
    case 'text':
      return doc.createTextNode(node.text);
    case 'codespan': {
      const code = doc.createElement('code');
      code.textContent = node.text;
      return code;
    }
    case 'em':
    case 'strong':
    case 'del':
      return el(doc, node.type, renderInlines(node.children, doc));
    case 'break':
      return doc.createElement('br');
    case 'link': {
      // Checked again here: a tree may come from elsewhere than `parse`.
      const href = safeHref(node.href);
      if (!href) return el(doc, 'span', renderInlines(node.children, doc));
      const a = el(doc, 'a', renderInlines(node.children, doc));
      a.setAttribute('href', href);
      a.setAttribute('rel', 'noopener noreferrer');
      a.setAttribute('target', '_blank');
      if (node.title) a.setAttribute('title', node.title);
      return a;
    }
    default:
      return doc.createTextNode('');
  }
}
