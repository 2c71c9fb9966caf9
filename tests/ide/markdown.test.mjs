// Tests of ide/lib/markdown/markdown.js (run: node --test tests/ide/): the parser's tree,
// its safety (raw HTML stays text, only http/https/mailto links), nesting, tables, and
// linear time on 1 MiB adversarial inputs; the renderer against a minimal fake DOM.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse, render, safeHref, MAX_INPUT, MAX_DEPTH } from '../../ide/lib/markdown/markdown.js';

/** Every node of a tree, depth first (blocks, list items, table cells, inlines). */
function* walk(node) {
  if (Array.isArray(node)) {
    for (const n of node) yield* walk(n);
    return;
  }
  if (!node || typeof node !== 'object') return;
  yield node;
  for (const key of ['children', 'items', 'summary', 'head', 'rows']) {
    if (node[key]) yield* walk(node[key]);
  }
}

const nodes = (tree, type) => [...walk(tree)].filter((n) => n.type === type);
const text = (tree) => nodes(tree, 'text').map((n) => n.text).join('') +
  nodes(tree, 'codespan').map((n) => n.text).join('');

test('a <script> element stays text, in a paragraph, a heading, a table and a quote', () => {
  const source = [
    '<script>alert(1)</script>',
    '',
    '# <img src=x onerror=alert(1)>',
    '',
    '| a |',
    '|---|',
    '| <script>alert(2)</script> |',
    '',
    '> <iframe src="javascript:alert(3)"></iframe>',
  ].join('\n');
  const tree = parse(source);
  const all = text(tree);
  assert.ok(all.includes('<script>alert(1)</script>'));
  assert.ok(all.includes('<img src=x onerror=alert(1)>'));
  assert.ok(all.includes('<script>alert(2)</script>'));
  assert.ok(all.includes('<iframe src="javascript:alert(3)"></iframe>'));
  assert.equal(nodes(tree, 'link').length, 0);
  const types = new Set([...walk(tree)].map((n) => n.type).filter(Boolean));
  for (const type of types) {
    assert.ok(
      ['document', 'paragraph', 'heading', 'text', 'table', 'blockquote'].includes(type),
      `unexpected node ${type}`,
    );
  }
});

test('javascript:, data:, vbscript: and relative links are not links; their text stays', () => {
  const bad = [
    'javascript:alert(1)',
    'JavaScript:alert(1)',
    'java&#x09;script:alert(1)',
    'data:text/html;base64,PHNjcmlwdD4=',
    'vbscript:msgbox(1)',
    'file:///etc/passwd',
    'runs/t1/1/stdout.txt',
    '//evil.example/x',
  ];
  for (const href of bad) {
    const tree = parse(`[click](${href}) and <${href}>`);
    assert.equal(nodes(tree, 'link').length, 0, href);
    assert.ok(text(tree).includes('click'), href);
  }
  // An escaped tab, a space, a newline inside the scheme: no link either.
  assert.equal(safeHref('java\tscript:alert(1)'), null);
  assert.equal(safeHref(' javascript:alert(1)'), null);
  assert.equal(safeHref('javascript\n:alert(1)'), null);
  assert.equal(nodes(parse('![x](javascript:alert(1))'), 'link').length, 0);
});

test('http, https and mailto links are links; bare URLs and autolinks too', () => {
  const tree = parse(
    'See [the docs](https://example.com/a?b=1 "Docs"), <http://x.test/p>, ' +
      'https://example.org/path_(1)). and <someone@example.com> or [mail](mailto:a@b.c).',
  );
  const links = nodes(tree, 'link');
  assert.deepEqual(
    links.map((l) => l.href),
    [
      'https://example.com/a?b=1',
      'http://x.test/p',
      'https://example.org/path_(1)',
      'mailto:someone@example.com',
      'mailto:a@b.c',
    ],
  );
  assert.equal(links[0].title, 'Docs');
  assert.equal(text(links[0].children), 'the docs');
  // The sentence's `).` is not part of the bare URL.
  assert.ok(text(tree).includes(')'));
});

test('emphasis, strong, strike, code spans, escapes and breaks', () => {
  const tree = parse('*a* **b** ***c*** _d_ ~~e~~ `f *g*` \\*h\\* snake_case_name\nl1  \nl2');
  assert.deepEqual(nodes(tree, 'em').map(text).sort(), ['a', 'c', 'd']);
  assert.deepEqual(nodes(tree, 'strong').map(text).sort(), ['b', 'c']);
  assert.deepEqual(nodes(tree, 'del').map(text), ['e']);
  assert.deepEqual(nodes(tree, 'codespan').map((n) => n.text), ['f *g*']);
  const all = text(tree);
  assert.ok(all.includes('*h*'));
  assert.ok(all.includes('snake_case_name'));
  assert.equal(nodes(tree, 'break').length, 1);
});

test('nested lists, a quote in a list, task items and ordered starts', () => {
  const tree = parse(
    [
      '- one',
      '  - one.a',
      '    - one.a.i',
      '  > quoted in one',
      '- [x] done',
      '- [ ] open',
      '',
      '3. three',
      '4. four',
    ].join('\n'),
  );
  const [bullets, ordered] = tree.children;
  assert.equal(bullets.type, 'list');
  assert.equal(bullets.ordered, false);
  assert.equal(bullets.items.length, 3);
  const inner = bullets.items[0].children.find((b) => b.type === 'list');
  assert.equal(text(inner.items[0].children[0]), 'one.a');
  const innermost = inner.items[0].children.find((b) => b.type === 'list');
  assert.equal(text(innermost), 'one.a.i');
  assert.ok(bullets.items[0].children.some((b) => b.type === 'blockquote'));
  assert.deepEqual(bullets.items.map((i) => i.checked), [null, true, false]);
  assert.equal(ordered.ordered, true);
  assert.equal(ordered.start, 3);
  assert.equal(ordered.items.length, 2);
});

test('a GFM table: alignment, escaped pipes, short and long rows', () => {
  const tree = parse(
    ['| Name | Value | Note |', '|:-----|------:|:---:|', '| a \\| b | `1` |', '| c | 2 | x | extra |', 'after'].join('\n'),
  );
  const table = tree.children[0];
  assert.equal(table.type, 'table');
  assert.deepEqual(table.align, ['left', 'right', 'center']);
  assert.deepEqual(table.head.map(text), ['Name', 'Value', 'Note']);
  assert.equal(table.rows.length, 3);
  assert.deepEqual(table.rows[0].map(text), ['a | b', '1', '']);
  assert.deepEqual(table.rows[1].map(text), ['c', '2', 'x']);
  // A row without a pipe still belongs to the table until a blank line (GFM).
  assert.deepEqual(table.rows[2].map(text), ['after', '', '']);
  // Not a table: the delimiter row's width differs from the header's.
  assert.equal(parse('| a | b |\n|---|\n| 1 | 2 |').children[0].type, 'paragraph');
});

test('headings, code blocks, quotes, rules and the Task Note details block', () => {
  const tree = parse(
    [
      '# Title #',
      'Setext',
      '======',
      '```html',
      '<script>alert(1)</script>',
      '```',
      '    indented <b>code</b>',
      '',
      '> a',
      '> > b',
      '',
      '---',
      '<details><summary>PRD <b>x</b></summary>',
      '',
      '````text',
      '</details> inside a fence',
      '````',
      '',
      '</details>',
      'after',
      '<details>',
      'never closed',
    ].join('\n'),
  );
  const types = tree.children.map((b) => b.type);
  assert.deepEqual(types, ['heading', 'heading', 'code', 'code', 'blockquote', 'hr', 'details', 'paragraph']);
  assert.equal(text(tree.children[0]), 'Title');
  assert.equal(tree.children[1].level, 1);
  assert.equal(tree.children[2].lang, 'html');
  assert.equal(tree.children[2].text, '<script>alert(1)</script>');
  assert.equal(tree.children[3].text, 'indented <b>code</b>');
  assert.equal(tree.children[4].children[1].type, 'blockquote');
  const details = tree.children[6];
  assert.equal(text(details.summary), 'PRD <b>x</b>');
  assert.equal(details.children[0].type, 'code');
  assert.equal(details.children[0].text, '</details> inside a fence');
  // An unclosed <details> is text.
  assert.ok(text(tree.children[7]).includes('<details>'));
});

test('input over MAX_INPUT is cut and the tree says so', () => {
  const big = 'x'.repeat(MAX_INPUT + 10);
  const tree = parse(big);
  assert.deepEqual(tree.truncated, { shown: MAX_INPUT, total: MAX_INPUT + 10 });
  assert.equal(text(tree).length, MAX_INPUT);
  assert.equal(parse('small').truncated, undefined);
});

test('nesting past MAX_DEPTH is kept as text, not lost', () => {
  const deep = '>'.repeat(MAX_DEPTH + 5) + ' bottom';
  const tree = parse(deep);
  let depth = 0;
  let node = tree;
  while (node.children && node.children[0] && node.children[0].type === 'blockquote') {
    node = node.children[0];
    depth++;
  }
  assert.equal(depth, MAX_DEPTH);
  assert.ok(text(tree).includes('bottom'));
});

/** Milliseconds `parse` takes on `input`, the best of `runs`. */
function timeOf(input, runs = 2) {
  let best = Infinity;
  for (let r = 0; r < runs; r++) {
    const start = process.hrtime.bigint();
    parse(input);
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e6);
  }
  return best;
}

/** `unit` repeated to about `size` characters. */
const fill = (unit, size) => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

const ADVERSARIAL = {
  'emphasis openers': (n) => fill('*a ', n),
  'alternating delimiters': (n) => fill('*_', n),
  'unclosed links': (n) => fill('[](', n),
  'links with long destinations': (n) => fill('[a](' + 'b'.repeat(3000) + ' ', n),
  'brackets and parens': (n) => fill('[]([]a', n),
  'backtick runs': (n) => {
    let s = '';
    for (let k = 1; s.length < n; k++) s += '`'.repeat(k % 300) + 'x';
    return s.slice(0, n);
  },
  'unclosed autolinks': (n) => fill('<a', n),
  'bare urls with parens': (n) => 'http://a.b/' + fill(')', n - 11),
  'rejected bare urls without spaces': (n) => fill('(https://?', n),
  'rejected bare urls with a space far away': (n) => ' ' + fill('(http://', n - 1),
  'nested quotes': (n) => fill('>', n),
  'nested lists': (n) => fill('- ', n),
  'unclosed details': (n) => fill('<details>\n', n),
  'table rows': (n) => '|a|b|\n|-|-|\n' + fill('|x|y|\n', n - 12),
  'wide header': (n) => fill('|a', n / 2) + '\n' + fill('|-', n / 2),
  'deep emphasis': (n) => '*a '.repeat(n / 6) + ' a*'.repeat(n / 6),
  'long line of spaces': (n) => '# a' + ' '.repeat(n - 4) + 'b',
  'list item lines': (n) => fill('- a\n  b\n\n', n),
};

for (const [name, make] of Object.entries(ADVERSARIAL)) {
  test(`linear time on 1 MiB of ${name}`, () => {
    const small = make(MAX_INPUT / 16);
    const large = make(MAX_INPUT);
    // The best of a few runs: a shared machine's pauses only ever add time.
    // Under 10 ms a timing is mostly noise (a scheduler tick on a loaded machine), so the
    // small input counts as at least that: quadratic inputs here take seconds, not ms.
    const tSmall = Math.max(timeOf(small, 3), 10);
    const tLarge = timeOf(large, 3);
    // Growth, not speed: both sizes timed in this run on this machine. Linear is about
    // 16 times the time for 16 times the input, quadratic 256; the bound leaves room for
    // a loaded machine between the two.
    assert.ok(tLarge / tSmall < 100, `${name}: ${tSmall.toFixed(1)} ms → ${tLarge.toFixed(1)} ms`);
  });
}

// ---------------------------------------------------------------------------
// render() against a minimal DOM: enough of Node/Element for markdown.js.

class FakeNode {
  constructor(tag, text) {
    this.tagName = tag;
    this.childNodes = [];
    this.attributes = {};
    this.style = {};
    this.className = '';
    this.text = text;
  }
  appendChild(child) {
    this.childNodes.push(child);
    return child;
  }
  setAttribute(name, value) {
    this.attributes[name] = String(value);
  }
  set textContent(value) {
    this.childNodes = [new FakeNode('#text', String(value))];
  }
  get textContent() {
    return this.tagName === '#text' ? this.text : this.childNodes.map((c) => c.textContent).join('');
  }
  *all() {
    yield this;
    for (const c of this.childNodes) yield* c.all();
  }
}

const fakeDocument = {
  createElement: (tag) => new FakeNode(tag.toUpperCase()),
  createTextNode: (text) => new FakeNode('#text', text),
};

test('render builds elements, never parses HTML: <script> is a text node', () => {
  const root = render(parse('Hi <script>alert(1)</script> [a](https://e.com) [b](javascript:x)'), fakeDocument);
  const tags = [...root.all()].map((n) => n.tagName);
  assert.ok(!tags.includes('SCRIPT'));
  assert.ok(root.textContent.includes('<script>alert(1)</script>'));
  const links = [...root.all()].filter((n) => n.tagName === 'A');
  assert.equal(links.length, 1);
  assert.equal(links[0].attributes.href, 'https://e.com/');
  assert.equal(links[0].attributes.rel, 'noopener noreferrer');
  assert.equal(links[0].attributes.target, '_blank');
});

test('render re-checks link targets of a tree that did not come from parse', () => {
  const tree = {
    type: 'document',
    children: [{ type: 'paragraph', children: [{ type: 'link', href: 'javascript:alert(1)', children: [{ type: 'text', text: 'x' }] }] }],
  };
  const root = render(tree, fakeDocument);
  assert.equal([...root.all()].filter((n) => n.tagName === 'A').length, 0);
  assert.equal(root.textContent, 'x');
});

test('render: tables with alignment, task boxes, code classes, the cut note', () => {
  const root = render(parse('| a | b |\n|:-:|--:|\n| 1 | 2 |\n\n- [x] done\n\n```rust\nfn main() {}\n```'), fakeDocument);
  const all = [...root.all()];
  const th = all.filter((n) => n.tagName === 'TH');
  assert.deepEqual(th.map((n) => n.style.textAlign), ['center', 'right']);
  const box = all.find((n) => n.tagName === 'INPUT');
  assert.equal(box.attributes.type, 'checkbox');
  assert.equal(box.attributes.checked, '');
  assert.ok('disabled' in box.attributes);
  assert.equal(all.find((n) => n.tagName === 'CODE').className, 'language-rust');
  const cut = render(parse('y'.repeat(MAX_INPUT + 1)), fakeDocument, {
    truncated: (info) => `cut ${info.shown}/${info.total}`,
  });
  const note = [...cut.all()].find((n) => n.className === 'md-truncated');
  assert.equal(note.textContent, `cut ${MAX_INPUT}/${MAX_INPUT + 1}`);
});
