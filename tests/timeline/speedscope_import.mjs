// Loads a `dsdiag timeline` file with speedscope's own Chrome-trace importer, under Node.
//
//   node speedscope_import.mjs SPEEDSCOPE_PACKAGE_DIR TIMELINE.json
//
// speedscope ships one minified browser bundle (dist/release/speedscope-*.js), no library
// entry point. Its module scope holds
//   async function NAME(fileName, text) { return (await IMPORTER).importProfileGroupFromText(...) }
// (what the app calls for pasted text). This script finds NAME by that shape, makes the
// bundle hand it out (a hoisted function, so it exists before any code runs), runs the
// bundle in a vm context with the few browser globals its start-up reads, and calls it. The
// app's final render into `document` fails there; the importer is set up by then.
//
// Prints one JSON line: {"format", "profiles": [{"name", "weight"}], "problems": [...]},
// where problems are the importer's complaints about spans ("Tried to end ...", "... was
// still open ..."): spans it could not nest as the file meant. Exit status: 0 imported,
// 1 the importer rejected the file or threw, 2 this speedscope build cannot be driven.
import fs from 'node:fs'
import path from 'node:path'
import vm from 'node:vm'

function fail(status, message) {
  process.stderr.write(`speedscope_import: ${message}\n`)
  process.exit(status)
}

const [packageDir, tracePath] = process.argv.slice(2)
if (!packageDir || !tracePath) fail(2, 'usage: speedscope_import.mjs SPEEDSCOPE_DIR FILE')

const releaseDir = path.join(packageDir, 'dist', 'release')
let bundleName
try {
  bundleName = fs.readdirSync(releaseDir).find(f => /^speedscope-.*\.js$/.test(f))
} catch (e) {
  fail(2, `cannot list ${releaseDir}: ${e.message}`)
}
if (!bundleName) fail(2, `no speedscope-*.js bundle in ${releaseDir}`)
const bundle = fs.readFileSync(path.join(releaseDir, bundleName), 'utf8')

const importer = bundle.match(
  /async function ([\w$]+)\([\w$]+,[\w$]+\)\{return\(await [\w$]+\)\.importProfileGroupFromText\(/)
const prologue = '"use strict";(()=>{'
if (!importer || !bundle.startsWith(prologue)) {
  fail(2, `${bundleName}: cannot find importProfileGroupFromText (speedscope version changed?)`)
}
const exposed = prologue + `globalThis.__dsdiagImportText=${importer[1]};` +
  bundle.slice(prologue.length)

const messages = []
const record = (...args) => messages.push(args.map(String).join(' '))
const noop = () => {}
const sandbox = {
  console: {log: record, warn: record, error: record, info: record, debug: noop,
            time: noop, timeEnd: noop, groupCollapsed: noop, groupEnd: noop},
  setTimeout, clearTimeout, setInterval, clearInterval, queueMicrotask,
  Promise, TextDecoder, TextEncoder, URL, atob, btoa,
  location: {hash: '', search: '', protocol: 'file:', href: 'file:///speedscope/index.html'},
  addEventListener: noop, removeEventListener: noop, devicePixelRatio: 1,
}
sandbox.globalThis = sandbox.window = sandbox.self = sandbox
vm.createContext(sandbox)
try {
  vm.runInContext(exposed, sandbox, {filename: bundleName})
} catch (e) {
  // Expected: the app renders into a `document` this sandbox does not have.
}
if (typeof sandbox.__dsdiagImportText !== 'function') fail(2, 'importer not exposed')

let group
try {
  group = await sandbox.__dsdiagImportText(path.basename(tracePath),
                                           fs.readFileSync(tracePath, 'utf8'))
} catch (e) {
  fail(1, `import threw: ${e && e.stack ? e.stack : e}`)
}
if (!group) fail(1, 'speedscope did not recognise the file as any format it imports')

const format = (messages.find(m => m.startsWith('Importing as ')) || '').slice(13)
const problems = messages.filter(m => /Tried to end|still open|out of order|Unrecognized/i.test(m))
const profiles = group.profiles.map(p => ({name: p.getName(), weight: p.getTotalWeight()}))
process.stdout.write(JSON.stringify({format, profiles, problems}) + '\n')
