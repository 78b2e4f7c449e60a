// The typst package's runner: reads {"tool", "input"} on stdin, compiles
// the Typst markup with typst.ts's compiler (napi, bound read-only at
// /opt/subako/typst/node_modules) and writes the PDF into /volume. One JSON
// object goes to fd 1. The compiler's own diagnostics (with line and
// column) are printed to fd 2, which the bundle's command sends to
// /tmp/.typst-errors so they can be read back into the answer.
'use strict';
const fs = require('fs');
const path = require('path');

const ERRORS = '/tmp/.typst-errors';
const VOLUME = '/volume';
const MAX_ERRORS = 16384;

function answer(obj) {
  fs.writeSync(1, JSON.stringify(obj));
  process.exit(0);
}

function fail(field, message) {
  answer({ ok: false, field, error: message });
}

// A volume path: relative (or starting /volume/), no .., below /volume.
function volumePath(field, p) {
  if (typeof p !== 'string' || p === '') fail(field, 'must be a path in the volume');
  if (p.startsWith(VOLUME + '/')) p = p.slice(VOLUME.length + 1);
  if (p.startsWith('/') || p.split('/').includes('..') || p.includes('\0')) {
    fail(field, 'must be relative to the volume, without ..');
  }
  const full = path.join(VOLUME, p);
  if (!full.startsWith(VOLUME + '/')) fail(field, 'must stay in the volume');
  return full;
}

function main() {
  const req = JSON.parse(fs.readFileSync(0, 'utf8'));
  if (req.tool !== 'compile') fail('tool', 'unknown tool ' + JSON.stringify(req.tool));
  const a = req.input || {};
  const maxPDF = a.max_pdf_bytes || 20 << 20;
  if (!fs.existsSync(VOLUME)) {
    fail('volume', 'this grant has no volume: the PDF is written into /volume, so the grant needs "volume": "write"');
  }
  const out = volumePath('output', a.output);
  if (!out.endsWith('.pdf')) fail('output', 'must end in .pdf');
  if (!a.overwrite && fs.existsSync(out)) fail('output', a.output + ' exists; set overwrite to true to replace it');

  const { NodeCompiler } = require('/opt/subako/typst/node_modules/@myriaddreamin/typst-ts-node-compiler');
  // The workspace is the volume: #image("pics/a.png") and #include read
  // its files (read-only access suffices for them). Fonts: the compiler's
  // embedded ones (Libertinus Serif, New Computer Modern, DejaVu Sans Mono)
  // and those it finds under the host's /usr/share/fonts.
  const compiler = NodeCompiler.create({ workspace: VOLUME, inputs: a.inputs || {} });
  const doc = {};
  if (typeof a.source === 'string') {
    // Inline markup is compiled as /volume/__main__.typ, a file that is
    // never written: relative paths in it are the volume's.
    doc.mainFileContent = a.source;
  } else {
    const main = volumePath('file', a.file);
    if (!main.endsWith('.typ')) fail('file', 'must end in .typ');
    let st;
    try { st = fs.statSync(main); } catch (e) { fail('file', a.file + ' is not in the volume'); }
    if (!st.isFile()) fail('file', a.file + ' is not a file');
    if (st.size > (a.max_source_bytes || 1 << 20)) fail('file', a.file + ' is ' + st.size + ' bytes; the limit is ' + (a.max_source_bytes || 1 << 20));
    doc.mainFilePath = main;
  }
  if (a.inputs) doc.inputs = a.inputs;
  const res = compiler.compile(doc);
  if (res.hasError() || !res.result) {
    res.printErrors();
    const errs = res.takeError();
    const diags = (errs && errs.shortDiagnostics || []).map((d) => ({
      message: d.message,
      path: d.path ? path.relative(VOLUME, d.path) : undefined,
    }));
    let text = '';
    try { text = fs.readFileSync(ERRORS, 'utf8'); } catch (e) { /* nothing printed */ }
    text = text.split(VOLUME + '/').join('');
    if (text.length > MAX_ERRORS) text = text.slice(0, MAX_ERRORS) + '\n…';
    answer({ ok: false, error: 'Typst compilation failed:\n' + text.trim(), diagnostics: diags });
  }
  const pages = res.result.numOfPages;
  const pdf = compiler.pdf(res.result, a.creation_timestamp ? { creationTimestamp: a.creation_timestamp } : undefined);
  if (pdf.length > maxPDF) fail('max_pdf_bytes', 'the PDF is ' + pdf.length + ' bytes; the limit is ' + maxPDF);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  // Written beside and renamed: a failed write leaves nothing.
  const tmp = path.join(path.dirname(out), '.' + path.basename(out) + '.part');
  try {
    fs.writeFileSync(tmp, pdf);
    fs.renameSync(tmp, out);
  } catch (e) {
    try { fs.unlinkSync(tmp); } catch (e2) { /* gone */ }
    fail('output', 'could not write ' + a.output + ': ' + e.message);
  }
  let warnings = [];
  const w = res.takeWarnings();
  if (w) warnings = (w.shortDiagnostics || []).map((d) => d.message).slice(0, 50);
  answer({ ok: true, output: path.relative(VOLUME, out), pages, bytes: pdf.length, warnings });
}

process.on('uncaughtException', (e) => {
  answer({ ok: false, error: 'typst runner: ' + (e && e.stack || String(e)) });
});

main();
