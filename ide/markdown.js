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
// The module imports nothing, so `node --test` runs the parser without a DOM.

/** Characters parsed at most; the rest is cut and said. */
export const MAX_INPUT = 1 << 20;
/** Block nesting (quotes, lists, details) parsed at most; deeper markers are text. */
export const MAX_DEPTH = 16;
const MAX_DEST = 4096;
const MAX_TITLE = 1024;
const MAX_AUTOLINK = 2048;
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
// Inlines

const PUNCT = /[!-/:-@[-`{-~\p{P}\p{S}]/u;
const SPACE = /\s/u;

function isPunct(c) {
  return c !== undefined && c !== '' && PUNCT.test(c);
}
function isSpace(c) {
  return c === undefined || c === '' || SPACE.test(c);
}

/** Code spans of `src` as [[start, end, contentStart, contentEnd]], in order. */
function codeSpans(src) {
  const runs = [];
  for (let i = 0; i < src.length; i++) {
    if (src[i] !== '`') continue;
    let j = i;
    while (j < src.length && src[j] === '`') j++;
    runs.push([i, j - i]);
    i = j - 1;
  }
  // For each run length, the runs of that length, and how far the search has come.
  const byLength = new Map();
  for (const [pos, len] of runs) {
    if (!byLength.has(len)) byLength.set(len, { list: [], next: 0 });
    byLength.get(len).list.push(pos);
  }
  const spans = [];
  let after = 0;
  for (const [pos, len] of runs) {
    if (pos < after) continue; // inside the previous span
    if (pos > 0 && src[pos - 1] === '\\' && !escapedBackslash(src, pos - 1)) continue;
    const same = byLength.get(len);
    while (same.next < same.list.length && same.list[same.next] <= pos) same.next++;
    if (same.next >= same.list.length) continue;
    const close = same.list[same.next];
    same.next++;
    spans.push([pos, close + len, pos + len, close]);
    after = close + len;
  }
  return spans;
}

/** Whether the backslash at `i` is itself escaped (an odd run of backslashes before). */
function escapedBackslash(src, i) {
  let n = 0;
  while (i - 1 - n >= 0 && src[i - 1 - n] === '\\') n++;
  return n % 2 === 1;
}

function codeSpanText(raw) {
  let text = raw.replace(/\n/g, ' ');
  if (text.length >= 2 && text[0] === ' ' && text[text.length - 1] === ' ' && text.trim() !== '') {
    text = text.slice(1, -1);
  }
  return text;
}

/** For each `[` (by position) the position of its `]`, skipping code spans and escapes. */
function matchBrackets(src, spans) {
  const match = new Map();
  const stack = [];
  let s = 0;
  for (let i = 0; i < src.length; i++) {
    if (s < spans.length && i === spans[s][0]) {
      i = spans[s][1] - 1;
      s++;
      continue;
    }
    const c = src[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === '[') stack.push(i);
    else if (c === ']' && stack.length) match.set(stack.pop(), i);
  }
  return match;
}

/**
 * Parses `(dest "title")` at `i` (the `(`): {href, title, end} or null. `budget.left`
 * is lowered by the characters read: a text made of thousands of `](` cannot make the
 * parser read each long destination again and again.
 */
function linkTail(src, i, budget) {
  const found = linkTailScan(src, i);
  budget.left -= found.read;
  return found.tail;
}

function linkTailScan(src, i) {
  if (src[i] !== '(') return { tail: null, read: 1 };
  let j = i + 1;
  const skipSpace = () => {
    let lines = 0;
    while (j < src.length && (src[j] === ' ' || src[j] === '\t' || src[j] === '\n')) {
      if (src[j] === '\n' && ++lines > 1) return false;
      j++;
    }
    return true;
  };
  if (!skipSpace()) return { tail: null, read: j - i };
  let dest = '';
  if (src[j] === '<') {
    const limit = Math.min(src.length, j + MAX_DEST);
    let k = j + 1;
    while (k < limit && src[k] !== '>' && src[k] !== '\n' && src[k] !== '<') {
      if (src[k] === '\\') k++;
      k++;
    }
    if (src[k] !== '>') return { tail: null, read: k - i };
    dest = src.slice(j + 1, k);
    j = k + 1;
  } else {
    const limit = Math.min(src.length, j + MAX_DEST);
    let depth = 0;
    const start = j;
    while (j < limit) {
      const c = src[j];
      if (c === '\\' && j + 1 < src.length && isPunct(src[j + 1])) {
        j += 2;
        continue;
      }
      if (c === '(') {
        if (++depth > 32) return { tail: null, read: j - i };
      } else if (c === ')') {
        if (depth === 0) break;
        depth--;
      } else if (c === ' ' || c === '\t' || c === '\n' || c.charCodeAt(0) < 32) {
        break;
      }
      j++;
    }
    if (j >= limit && j < src.length) return { tail: null, read: j - i };
    if (depth !== 0) return { tail: null, read: j - i };
    dest = src.slice(start, j);
  }
  const beforeTitle = j;
  if (!skipSpace()) return { tail: null, read: j - i };
  let title = null;
  const open = src[j];
  if (j > beforeTitle && (open === '"' || open === "'" || open === '(')) {
    const close = open === '(' ? ')' : open;
    const limit = Math.min(src.length, j + MAX_TITLE);
    let k = j + 1;
    while (k < limit && src[k] !== close) {
      if (src[k] === '\\') k++;
      k++;
    }
    if (src[k] !== close) return { tail: null, read: k - i };
    title = unescape(src.slice(j + 1, k));
    j = k + 1;
    if (!skipSpace()) return { tail: null, read: j - i };
  }
  if (src[j] !== ')') return { tail: null, read: j - i };
  return { tail: { href: unescape(dest), title, end: j + 1 }, read: j - i };
}

function unescape(s) {
  if (s.indexOf('\\') < 0) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && i + 1 < s.length && isPunct(s[i + 1]) && s.charCodeAt(i + 1) < 128) {
      out += s[i + 1];
      i++;
    } else {
      out += s[i];
    }
  }
  return out;
}

/**
 * The URL a link may point to (http, https, mailto), normalised, or null. Parsed by
 * `URL`, so `java\tscript:`, entity tricks and relative paths are all refused.
 */
export function safeHref(raw) {
  const text = String(raw ?? '').trim();
  // Control characters and spaces are never part of a link we make.
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 32 || c === 127) return null;
  }
  let url;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol === 'http:' || url.protocol === 'https:') {
    return url.hostname ? url.href : null;
  }
  if (url.protocol === 'mailto:') return url.href;
  return null;
}

const AUTOLINK_URI = /^[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*$/;
const AUTOLINK_EMAIL = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** `<...>` at `i`: {href, text, end} for an autolink, else null. */
function autolinkAt(src, i) {
  const limit = Math.min(src.length, i + MAX_AUTOLINK);
  let k = i + 1;
  while (k < limit && src[k] !== '>' && src[k] !== '<' && src[k] !== '\n' && src[k] !== ' ') k++;
  if (src[k] !== '>') return null;
  const inner = src.slice(i + 1, k);
  let href = null;
  if (AUTOLINK_URI.test(inner)) href = safeHref(inner);
  else if (AUTOLINK_EMAIL.test(inner)) href = safeHref('mailto:' + inner);
  if (!href) return null;
  return { href, text: inner, end: k + 1 };
}

/**
 * A bare `http://`, `https://` or `www.` URL at `i` (GFM): {href, text, end} or null.
 * `budget.left` is lowered by the characters read: a rejected candidate is read to the
 * end of its word, and a word of a million characters holding a candidate every ten
 * would otherwise be read a hundred thousand times.
 */
function bareUrlAt(src, i, budget) {
  const prev = src[i - 1];
  if (i > 0 && !isSpace(prev) && '(*_~"\''.indexOf(prev) < 0) return null;
  let scheme = '';
  const head = src.slice(i, i + 8).toLowerCase();
  if (head.startsWith('https://')) scheme = '';
  else if (head.startsWith('http://')) scheme = '';
  else if (head.startsWith('www.')) scheme = 'http://';
  else return null;
  let k = i;
  let open = 0;
  let close = 0;
  while (k < src.length && !isSpace(src[k]) && src[k] !== '<') {
    if (src[k] === '(') open++;
    else if (src[k] === ')') close++;
    k++;
  }
  budget.left -= k - i;
  // Trailing punctuation ends a sentence, not the URL; an unbalanced `)` too.
  let end = k;
  for (;;) {
    const c = src[end - 1];
    if ('?!.,:*_~\'";'.indexOf(c) >= 0) {
      end--;
    } else if (c === ')' && close > open) {
      close--;
      end--;
    } else {
      break;
    }
  }
  const text = src.slice(i, end);
  const href = safeHref(scheme + text);
  if (!href || text.length <= (scheme ? 4 : 8)) return null;
  return { href, text, end };
}

/** Characters that may start an inline construct; anything else is plain text. */
const INLINE_SPECIAL = new Set(['\\', '\n', '[', '!', '<', 'h', 'H', 'w', 'W', '*', '_', '~']);

/**
 * Parses inline Markdown. Links are not parsed inside a link's text (`links` false),
 * which also bounds the recursion to one level.
 */
export function parseInline(src, links = true) {
  const spans = codeSpans(src);
  const brackets = links ? matchBrackets(src, spans) : null;
  const budget = { left: 8 * src.length + 65536 };
  // A doubly linked list of nodes, so emphasis can wrap a stretch in O(1).
  const head = { prev: null, next: null };
  let tail = head;
  const append = (node) => {
    node.prev = tail;
    node.next = null;
    tail.next = node;
    tail = node;
    return node;
  };
  // Pending text as slices of `src` (joined once): growing one string a character at a
  // time and trimming it at each line end would be quadratic on a huge paragraph.
  let parts = [];
  const flushText = () => {
    if (parts.length) {
      append({ type: 'text', text: parts.join('') });
      parts = [];
    }
  };
  const delims = []; // in order; each {node, char, count, orig, canOpen, canClose}
  let s = 0; // next code span
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    // A link or URL jumped over may have held code spans (or begun one).
    while (s < spans.length && spans[s][0] < i) s++;
    if (s < spans.length && i === spans[s][0]) {
      flushText();
      append({ type: 'codespan', text: codeSpanText(src.slice(spans[s][2], spans[s][3])) });
      i = spans[s][1];
      s++;
      continue;
    }
    if (c === '\\') {
      const n = src[i + 1];
      if (n === '\n') {
        flushText();
        append({ type: 'break' });
        i += 2;
        continue;
      }
      if (n !== undefined && n.charCodeAt(0) < 128 && isPunct(n)) {
        parts.push(n);
        i += 2;
        continue;
      }
      parts.push(c);
      i++;
      continue;
    }
    if (c === '\n') {
      // Spaces before a line end are dropped; two or more make a hard break.
      let spaces = 0;
      while (i - 1 - spaces >= 0 && src[i - 1 - spaces] === ' ') spaces++;
      const last = parts.length ? parts[parts.length - 1] : '';
      if (spaces && last.endsWith(' ')) parts[parts.length - 1] = last.trimEnd();
      if (spaces >= 2) {
        flushText();
        append({ type: 'break' });
      } else {
        parts.push('\n');
      }
      i++;
      while (src[i] === ' ') i++;
      continue;
    }
    if (links && (c === '[' || (c === '!' && src[i + 1] === '['))) {
      const open = c === '!' ? i + 1 : i;
      const close = brackets.get(open);
      const tailOf = close !== undefined && budget.left > 0 ? linkTail(src, close + 1, budget) : null;
      if (tailOf) {
        flushText();
        const inner = parseInline(src.slice(open + 1, close), false);
        const href = safeHref(tailOf.href);
        if (href) {
          // An image is shown as a link to it: the CSP loads no other origin's images.
          const children = inner.length ? inner : [{ type: 'text', text: tailOf.href }];
          const link = { type: 'link', href, title: tailOf.title, children };
          append(link);
        } else {
          // Not a link we make: its text, then where it pointed, as text.
          for (const node of inner) append(node);
          append({ type: 'text', text: ` (${tailOf.href})` });
        }
        i = tailOf.end;
        continue;
      }
    }
    if (links && c === '<') {
      const auto = autolinkAt(src, i);
      if (auto) {
        flushText();
        append({ type: 'link', href: auto.href, title: null, children: [{ type: 'text', text: auto.text }] });
        i = auto.end;
        continue;
      }
    }
    if (links && budget.left > 0 && (c === 'h' || c === 'H' || c === 'w' || c === 'W')) {
      const bare = bareUrlAt(src, i, budget);
      if (bare) {
        flushText();
        append({ type: 'link', href: bare.href, title: null, children: [{ type: 'text', text: bare.text }] });
        i = bare.end;
        continue;
      }
    }
    if (c === '*' || c === '_' || c === '~') {
      let j = i;
      while (j < src.length && src[j] === c) j++;
      const count = j - i;
      const before = i > 0 ? src[i - 1] : undefined;
      const after = src[j];
      const left = !isSpace(after) && (!isPunct(after) || isSpace(before) || isPunct(before));
      const right = !isSpace(before) && (!isPunct(before) || isSpace(after) || isPunct(after));
      let canOpen = left;
      let canClose = right;
      if (c === '_') {
        canOpen = left && (!right || isPunct(before));
        canClose = right && (!left || isPunct(after));
      }
      flushText();
      const node = append({ type: 'text', text: src.slice(i, j) });
      if ((c !== '~' || count === 2) && (canOpen || canClose)) {
        delims.push({ node, char: c, count, orig: count, canOpen, canClose });
      }
      i = j;
      continue;
    }
    // A run of plain characters, up to the next one that may start something.
    let j = i + 1;
    const stop = s < spans.length ? spans[s][0] : src.length;
    while (j < src.length && j < stop && !INLINE_SPECIAL.has(src[j])) j++;
    parts.push(src.slice(i, j));
    i = j;
  }
  flushText();
  processEmphasis(delims);
  return toArray(head.next);
}

/** The CommonMark delimiter algorithm over `delims` (in order), rewriting the list. */
function processEmphasis(delims) {
  // Delimiters as a linked list too, so removal is O(1).
  for (let k = 0; k < delims.length; k++) {
    delims[k].before = delims[k - 1] || null;
    delims[k].after = delims[k + 1] || null;
    delims[k].removed = false;
  }
  const unlink = (d) => {
    d.removed = true;
    if (d.before) d.before.after = d.after;
    if (d.after) d.after.before = d.before;
  };
  const bottoms = new Map(); // char|canOpen|orig%3 → the delimiter below which to stop
  let current = delims[0] || null;
  while (current) {
    if (!current.canClose) {
      current = current.after;
      continue;
    }
    const key = `${current.char}${current.canOpen ? 1 : 0}${current.orig % 3}`;
    const bottom = bottoms.get(key) || null;
    let opener = current.before;
    let found = null;
    while (opener && opener !== bottom) {
      if (opener.char === current.char && opener.canOpen) {
        const odd = current.char !== '~' && (opener.canClose || current.canOpen) &&
          (opener.orig + current.orig) % 3 === 0 && !(opener.orig % 3 === 0 && current.orig % 3 === 0);
        if (!odd) {
          found = opener;
          break;
        }
      }
      opener = opener.before;
    }
    if (!found) {
      bottoms.set(key, current.before);
      const next = current.after;
      if (!current.canOpen) unlink(current);
      current = next;
      continue;
    }
    const use = current.char === '~' ? 2 : current.count >= 2 && found.count >= 2 ? 2 : 1;
    const type = current.char === '~' ? 'del' : use === 2 ? 'strong' : 'em';
    found.count -= use;
    current.count -= use;
    found.node.text = found.node.text.slice(use);
    current.node.text = current.node.text.slice(use);
    // Wrap the nodes strictly between the two runs.
    const wrap = { type, first: null, prev: found.node, next: current.node };
    const first = found.node.next;
    const last = current.node.prev;
    if (first !== current.node) {
      first.prev = null;
      last.next = null;
      wrap.first = first;
    }
    found.node.next = wrap;
    current.node.prev = wrap;
    // Delimiters between them can no longer match anything.
    for (let d = found.after; d && d !== current; d = d.after) d.removed = true;
    found.after = current;
    current.before = found;
    if (found.count === 0) {
      removeNode(found.node);
      unlink(found);
    }
    if (current.count === 0) {
      removeNode(current.node);
      const next = current.after;
      unlink(current);
      current = next;
    }
  }
}

function removeNode(node) {
  if (node.prev) node.prev.next = node.next;
  if (node.next) node.next.prev = node.prev;
}

/** Emphasis nested deeper than this keeps its text but not its wrappers. */
const MAX_INLINE_DEPTH = 32;

/**
 * Linked nodes → plain arrays, merging adjacent text. Iterative (an explicit stack), so
 * `*a *b *c ...*` nested a hundred thousand times deep cannot overflow the call stack.
 */
function toArray(first) {
  const root = [];
  const stack = [{ out: root, node: first, depth: 0 }];
  while (stack.length) {
    const frame = stack[stack.length - 1];
    const node = frame.node;
    if (!node) {
      stack.pop();
      continue;
    }
    frame.node = node.next;
    if ('first' in node) {
      // A wrapper made by `processEmphasis`.
      if (frame.depth < MAX_INLINE_DEPTH) {
        const plain = { type: node.type, children: [] };
        frame.out.push(plain);
        stack.push({ out: plain.children, node: node.first, depth: frame.depth + 1 });
      } else {
        stack.push({ out: frame.out, node: node.first, depth: frame.depth });
      }
      continue;
    }
    if (node.type === 'text') {
      if (node.text === '') continue;
      const prev = frame.out[frame.out.length - 1];
      if (prev && prev.type === 'text') prev.text += node.text;
      else frame.out.push({ type: 'text', text: node.text });
      continue;
    }
    const plain = { ...node };
    delete plain.prev;
    delete plain.next;
    frame.out.push(plain);
  }
  return root;
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
