// Validates mermaid diagrams with mermaid's own parser, in jsdom: `node validate.mjs FILE...`.
// Exit 0 when every file parses; prints one `ok`/`error` line per file.
import { JSDOM } from 'jsdom';
import { readFileSync } from 'node:fs';
const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
globalThis.DOMPurify = undefined;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false });
let failed = 0;
for (const file of process.argv.slice(2)) {
  const text = readFileSync(file, 'utf8');
  try {
    const result = await mermaid.parse(text);
    console.log(`ok ${file} ${result.diagramType}`);
  } catch (e) {
    failed++;
    console.log(`error ${file}: ${e.message ?? e}`);
  }
}
process.exit(failed ? 1 : 0);
