// Verdicts for the conformance_next interop test (called by run.sh once all scenarios ran).
//
//   node evaluate.mjs RESULTS_DIR KNOWN_FAILURES_FILE [REQUIRED_CHECKS_FILE]
//
// RESULTS_DIR holds one folder per run, named "<NN>__<spec-version>__<scenario>" (NN = the
// run's position in run.sh's MATRIX, for the summary's order), each with either the
// suite's checks.json or a file "error" (one line: why there is no checks.json, e.g. a timeout).
//
// A check is "not passed" when its status is FAILURE or WARNING (SKIPPED and INFO are neither).
// A check's key is its id, plus "@<details.fieldIssue>" when the run emits that id more than once
// and the suite tags the instance (server-stateless emits sep-2575-http-server-meta-invalid-400
// once per _meta probe). A known-failures
// entry "<spec-version> <scenario> <check> <owner> [note…]" covers the checks of that scenario
// run whose key or id equals <check>.
//
// Per scenario run (printed in the summary):
//   ✓  passed: no FAILURE and at least one SUCCESS (the suite's own per-scenario rule)
//   ~  failed, but every not-passed check is on the known-failures list
//   ✗  failed with a check that is not on the list, or no SUCCESS, or no checks.json
// A check on REQUIRED_CHECKS_FILE ("<spec-version> <scenario> <check id>" per line) must be
// SUCCESS in its run; SKIPPED or absent makes that run ✗ too.
// Exit status 1 iff some run is ✗, or some WARNING is not on the list (a WARNING does not fail
// a scenario in the suite's rule, but the two list-changed delivery checks are WARNING-level and
// are exactly a hub's job, so an unlisted one fails this test). Listed checks that now pass, and
// entries that matched no check at all, are printed loudly (they do not fail the test).
import fs from "node:fs";
import path from "node:path";

const [resultsDir, knownFile, requiredFile] = process.argv.slice(2);
const knownName = path.basename(knownFile);
const NOT_PASSED = new Set(["FAILURE", "WARNING"]);

// --- the known-failures list ------------------------------------------------------------------
const known = [];
fs.readFileSync(knownFile, "utf8").split("\n").forEach((raw, i) => {
  const line = raw.replace(/#.*$/, "").trim();
  if (!line) return;
  const [version, scenario, check, owner, ...note] = line.split(/\s+/);
  if (!owner) throw new Error(`${knownFile}:${i + 1}: expected "<spec-version> <scenario> <check> <owner> [note]"`);
  known.push({ version, scenario, check, owner, note: note.join(" "), line: i + 1, matched: [] });
});

// Ids the current scenario run emits more than once get "@<fieldIssue>" keys (set per run).
let repeated = new Set();
const keyOf = (c) =>
  repeated.has(c.id) && c.details && typeof c.details.fieldIssue === "string" ? `${c.id}@${c.details.fieldIssue}` : c.id;
const entriesFor = (version, scenario, c) =>
  known.filter((k) => k.version === version && k.scenario === scenario && (k.check === keyOf(c) || k.check === c.id));

const required = !requiredFile ? [] : fs.readFileSync(requiredFile, "utf8").split("\n")
  .map((l) => l.replace(/#.*$/, "").trim()).filter(Boolean).map((l) => l.split(/\s+/));

// --- the runs ---------------------------------------------------------------------------------
const runs = fs.readdirSync(resultsDir).filter((d) => d.includes("__")).sort();
const summary = [];
const ran = new Set();

for (const dir of runs) {
  const [, version, scenario] = dir.split("__");  // "<NN>__<spec-version>__<scenario>"
  ran.add(`${version} ${scenario}`);
  const label = `${scenario} @ ${version}`;
  const checksFile = path.join(resultsDir, dir, "checks.json");
  if (!fs.existsSync(checksFile)) {
    const why = fs.existsSync(path.join(resultsDir, dir, "error"))
      ? fs.readFileSync(path.join(resultsDir, dir, "error"), "utf8").trim() : "no checks.json";
    summary.push(`✗ ${label}: ${why}`);
    continue;
  }
  const checks = JSON.parse(fs.readFileSync(checksFile, "utf8"));
  const seen = new Set();
  repeated = new Set();
  for (const c of checks) (seen.has(c.id) ? repeated : seen).add(c.id);
  const n = (s) => checks.filter((c) => c.status === s).length;
  const passed = n("SUCCESS"), failed = n("FAILURE"), warnings = n("WARNING"), skipped = n("SKIPPED");
  const unlisted = [], listed = [];
  for (const c of checks) {
    const entries = entriesFor(version, scenario, c);
    entries.forEach((k) => k.matched.push(c));
    if (!NOT_PASSED.has(c.status)) continue;
    (entries.length ? listed : unlisted).push({ c, entries });
  }
  const ok = failed === 0 && passed > 0;
  const counts = `${passed} passed, ${failed} failed` + (warnings ? `, ${warnings} warning(s)` : "") +
                 (skipped ? `, ${skipped} skipped` : "");
  const missing = required.filter(([v, sc]) => v === version && sc === scenario)
    .filter(([, , id]) => !checks.some((c) => c.id === id && c.status === "SUCCESS"))
    .map(([, , id]) => `${id} [${checks.find((c) => c.id === id)?.status ?? "absent"}]`);
  let mark;
  if (!passed || unlisted.length || missing.length) mark = "✗";      // unlisted FAILURE/WARNING, or no SUCCESS at all
  else if (failed === 0) mark = "✓";
  else mark = "~";                                 // every FAILURE is a known one
  const verdict = ok ? "PASS" : "FAIL";
  summary.push(`${mark} ${label}: ${verdict} (${counts})` +
               (listed.length ? `; known: ${[...new Set(listed.map(({ c }) => keyOf(c)))].join(", ")}` : "") +
               (unlisted.length ? `; NOT ON THE LIST: ${[...new Set(unlisted.map(({ c }) => `${keyOf(c)} [${c.status}]`))].join(", ")}` : "") +
               (missing.length ? `; REQUIRED BUT NOT SUCCESS: ${missing.join(", ")}` : "") +
               (!passed ? "; no SUCCESS check at all" : ""));

  if (unlisted.length || listed.length) console.log(`\n=== ${label}: checks that did not pass`);
  for (const { c, entries } of [...unlisted, ...listed]) {
    const tag = entries.length ? `known (${entries.map((k) => `${k.owner}, ${knownName}:${k.line}`).join("; ")})`
                               : "NOT ON THE KNOWN-FAILURES LIST";
    let d = c.details === undefined ? "" : JSON.stringify(c.details);
    if (d.length > 1200) d = d.slice(0, 1200) + "…";
    console.log(`--- ${c.status} ${keyOf(c)} — ${tag}\n    ${c.errorMessage ?? ""}${d ? `\n    details: ${d}` : ""}`);
  }
}

// --- stale entries ----------------------------------------------------------------------------
const stale = [], unmatched = [];
for (const k of known) {
  if (!ran.has(`${k.version} ${k.scenario}`)) continue;   // scenario not run (e.g. it timed out)
  if (k.matched.length === 0) unmatched.push(k);
  else if (!k.matched.some((c) => NOT_PASSED.has(c.status))) stale.push(k);
}

console.log("\n=== SUMMARY (interop_conformance_next: @modelcontextprotocol/conformance server scenarios)");
for (const s of summary) console.log(s);
const nOk = summary.filter((s) => s.startsWith("✓")).length;
const nKnown = summary.filter((s) => s.startsWith("~")).length;
console.log(`${nOk} passed, ${nKnown} failed with known failures only, ${summary.length - nOk - nKnown} failed otherwise`);

if (stale.length) {
  console.log(`\n!!! KNOWN FAILURES THAT NOW PASS — remove these lines from ${knownName}:`);
  for (const k of stale) {
    console.log(`!!!   ${knownName}:${k.line}: ${k.version} ${k.scenario} ${k.check} (${k.owner}) — ` +
                k.matched.map((c) => `${keyOf(c)} ${c.status}`).join(", "));
  }
}
if (unmatched.length) {
  console.log("\n!!! KNOWN-FAILURES ENTRIES THAT MATCHED NO CHECK (renamed check or changed suite?):");
  for (const k of unmatched) console.log(`!!!   ${knownName}:${k.line}: ${k.version} ${k.scenario} ${k.check}`);
}
process.exit(summary.some((s) => s.startsWith("✗")) ? 1 : 0);
