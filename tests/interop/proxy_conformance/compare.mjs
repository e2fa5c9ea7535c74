// Verdicts and the table of the proxy_conformance interop test (run.sh calls it once every suite
// run is done).
//
//   node compare.mjs RESULTS_DIR TABLE_MD
//
// RESULTS_DIR holds one folder per arm, "<NN>__<upstream>__<spec-version>", each with
//   scenarios.txt          the scenarios of `conformance list --server --spec-version V`, one a line
//   alone/, through/       the suite's -o folders (server-<scenario>-<timestamp>/checks.json)
//   alone.error, through.error   (only if that run did not finish: why)
//   alone.stats.json, through.stats.json   (upstreams with GET /stats only) what the upstream's
//                          /mcp received during that run: {"<era> <method>": count}
//
// A check's key is its id, "@<details.fieldIssue>" when the suite tags the instance, and "#n" for
// the n-th repeat of the same id (n >= 1). Statuses rank FAILURE < WARNING < the rest < SUCCESS.
// A scenario passes when it has no FAILURE and at least one SUCCESS.
//
// The test fails (exit 1) when, in some arm:
//   - a listed scenario has no checks.json in either run, or a run did not finish;
//   - a check is SUCCESS alone but not through mcpfan, or WARNING alone and FAILURE (or absent)
//     through mcpfan; this covers every scenario that passes alone;
//   - `wire-schema-valid` fails through mcpfan with a schema violation the upstream alone does
//     not have (mcpfan broke a message on the way);
//   - a REQUIRED_THROUGH scenario or check does not pass through mcpfan (the subscription
//     scenarios; violations the upstream has alone are allowed, see below);
//   - the upstream received one of mcpfan's own methods (MCPFAN_SERVES) during the through run.
// The table (markdown) goes to TABLE_MD and to stdout.
import fs from 'node:fs';
import path from 'node:path';

const [resultsDir, tableFile] = process.argv.slice(2);
if (!resultsDir || !tableFile) {
    console.error('usage: node compare.mjs RESULTS_DIR TABLE_MD');
    process.exit(2);
}

// What must pass through mcpfan whatever the upstream alone does: mcpfan serves these itself.
// A scenario entry passes when all its checks are SUCCESS except `wire-schema-valid` failing
// only with violations the upstream alone has too (the SDK 1.32.2 example's serverInfo icon
// `./mcp.svg` is not a URI; mcpfan relays the upstream's serverInfo as it is).
const REQUIRED_THROUGH = {
    '2025-11-25': { scenarios: ['resources-subscribe', 'resources-unsubscribe'], checks: [] },
    '2026-07-28': {
        scenarios: [],
        checks: [
            ['server-stateless', 'sep-2575-server-sends-subscription-ack'],
            ['server-stateless', 'sep-2575-server-tags-subscription-id'],
            ['server-stateless', 'sep-2575-server-honors-notification-filter']
        ]
    }
};
// Requests mcpfan answers itself in front of an upstream: none may reach the upstream while the
// suite runs through mcpfan (keys of upstream_v2's GET /stats).
const MCPFAN_SERVES = ['2026 subscriptions/listen', '2025 resources/subscribe', '2025 resources/unsubscribe'];

const RANK = { FAILURE: 0, WARNING: 1, SUCCESS: 3 };
const rank = s => RANK[s] ?? 2;
const SCHEMA = 'wire-schema-valid';

function loadRun(dir) {
    const out = new Map(); // scenario -> checks[]
    if (!fs.existsSync(dir)) return out;
    for (const d of fs.readdirSync(dir)) {
        const m = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(d);
        const file = path.join(dir, d, 'checks.json');
        if (m && fs.existsSync(file)) out.set(m[1], JSON.parse(fs.readFileSync(file, 'utf8')));
    }
    return out;
}

function keyed(checks) {
    const out = new Map();
    const seen = new Map();
    for (const c of checks) {
        const base = c.id + (typeof c.details?.fieldIssue === 'string' ? `@${c.details.fieldIssue}` : '');
        const n = seen.get(base) ?? 0;
        seen.set(base, n + 1);
        out.set(n ? `${base}#${n}` : base, c);
    }
    return out;
}

function violations(check) {
    const out = new Set();
    for (const v of check?.details?.violations ?? []) for (const e of v.errors ?? []) out.add(`${v.context}: ${e}`);
    return out;
}

const tally = checks => ({
    ok: checks.filter(c => c.status === 'SUCCESS').length,
    failed: checks.filter(c => c.status === 'FAILURE').length,
    total: checks.length
});
const passes = t => t.failed === 0 && t.ok > 0;

// Passes apart from schema violations the upstream has alone.
function passesApartFromUpstream(through, alone) {
    const base = violations(alone?.find(c => c.id === SCHEMA));
    return (
        through.length > 0 &&
        through.every(c => c.status === 'SUCCESS' || (c.id === SCHEMA && [...violations(c)].every(v => base.has(v))))
    );
}

const problems = [];
const arms = [];
for (const dir of fs.readdirSync(resultsDir).filter(d => d.includes('__')).sort()) {
    const [, upstream, version] = dir.split('__');
    const armDir = path.join(resultsDir, dir);
    const label = `${upstream} @ ${version}`;
    const scenarios = fs.readFileSync(path.join(armDir, 'scenarios.txt'), 'utf8').split('\n').filter(Boolean);
    if (scenarios.length === 0) problems.push(`${label}: \`conformance list --server\` listed no scenario`);
    const runs = {};
    const stats = {};
    for (const via of ['alone', 'through']) {
        const err = path.join(armDir, `${via}.error`);
        if (fs.existsSync(err)) problems.push(`${label}, ${via}: ${fs.readFileSync(err, 'utf8').trim()}`);
        runs[via] = loadRun(path.join(armDir, via));
        const s = path.join(armDir, `${via}.stats.json`);
        if (fs.existsSync(s)) stats[via] = JSON.parse(fs.readFileSync(s, 'utf8'));
    }
    const rows = new Map();
    for (const scenario of scenarios) {
        const alone = runs.alone.get(scenario);
        const through = runs.through.get(scenario);
        for (const [via, checks] of [['alone', alone], ['through mcpfan', through]]) {
            if (!checks) problems.push(`${label}: ${scenario}: no checks.json ${via}`);
        }
        if (!alone || !through) {
            rows.set(scenario, { alone: alone && tally(alone), through: through && tally(through) });
            continue;
        }
        const a = keyed(alone);
        const t = keyed(through);
        for (const [key, c] of a) {
            const got = t.get(key);
            const want = c.status === 'SUCCESS' ? 'SUCCESS' : c.status === 'WARNING' ? 'WARNING or better' : null;
            if (!want) continue;
            if (!got || rank(got.status) < rank(c.status))
                problems.push(
                    `${label}: ${scenario}: check ${key} is ${c.status} alone but ${got ? got.status : 'absent'} through mcpfan` +
                        (got?.errorMessage ? ` — ${got.errorMessage.slice(0, 400)}` : '')
                );
        }
        const schemaThrough = through.find(c => c.id === SCHEMA);
        if (schemaThrough?.status === 'FAILURE') {
            const base = violations(alone.find(c => c.id === SCHEMA));
            for (const v of violations(schemaThrough)) {
                if (!base.has(v)) problems.push(`${label}: ${scenario}: ${SCHEMA} through mcpfan has a violation the upstream alone does not: ${v.slice(0, 500)}`);
            }
        }
        const ta = tally(alone);
        const tt = tally(through);
        if (passes(ta) && !passes(tt)) problems.push(`${label}: ${scenario} passes alone (${ta.ok}/${ta.total}) but not through mcpfan (${tt.ok}/${tt.total})`);
        rows.set(scenario, { alone: ta, through: tt, throughChecks: through, aloneChecks: alone });
    }
    const req = REQUIRED_THROUGH[version] ?? { scenarios: [], checks: [] };
    for (const scenario of req.scenarios) {
        const r = rows.get(scenario);
        if (!r?.throughChecks) problems.push(`${label}: required scenario ${scenario} did not run through mcpfan`);
        else if (!passesApartFromUpstream(r.throughChecks, r.aloneChecks))
            problems.push(`${label}: required scenario ${scenario} does not pass through mcpfan: ${r.throughChecks.filter(c => c.status !== 'SUCCESS').map(c => `${c.id} ${c.status} ${c.errorMessage ?? ''}`.slice(0, 300)).join('; ')}`);
        else {
            r.required = true;
            r.upstreamOnly = [...violations(r.throughChecks.find(c => c.id === SCHEMA && c.status !== 'SUCCESS'))];
        }
    }
    for (const [scenario, id] of req.checks) {
        const c = rows.get(scenario)?.throughChecks?.find(x => x.id === id);
        if (c?.status !== 'SUCCESS') problems.push(`${label}: required check ${scenario}/${id} is ${c?.status ?? 'absent'} through mcpfan`);
    }
    const served = {};
    if (stats.through) {
        for (const k of MCPFAN_SERVES) {
            served[k] = { alone: stats.alone?.[k] ?? 0, through: stats.through[k] ?? 0 };
            if (served[k].through !== 0) problems.push(`${label}: the upstream received ${served[k].through} × ${k} during the run through mcpfan (mcpfan serves it)`);
        }
    }
    arms.push({ label, upstream, version, rows, served });
}

// --- the table ---------------------------------------------------------------------------------
const cell = t => (!t ? 'no result' : t.total === 0 ? '– 0/0' : `${passes(t) ? '✓' : '✗'} ${t.ok}/${t.total}`);
const allScenarios = [];
for (const arm of arms) for (const s of arm.rows.keys()) if (!allScenarios.includes(s)) allScenarios.push(s);
const lines = [];
lines.push(`| scenario | ${arms.map(a => `${a.label}: alone | through mcpfan`).join(' | ')} |`);
lines.push(`|---|${arms.map(() => '---|---').join('|')}|`);
for (const s of allScenarios) {
    const cells = arms.map(a => {
        const r = a.rows.get(s);
        if (!r) return 'n/a | n/a';
        // required and passing: ✓ outright, or ✓* = apart from the upstream's own schema violations
        const mark = !r.required ? '' : passes(r.through) ? ' (required)' : ' (required: ✓*)';
        return `${cell(r.alone)} | ${cell(r.through)}${mark}`;
    });
    lines.push(`| ${s} | ${cells.join(' | ')} |`);
}
const sum = (a, via, f) => [...a.rows.values()].reduce((n, r) => n + (r[via] ? f(r[via]) : 0), 0);
lines.push(
    `| **scenarios passing** | ${arms.map(a => `**${sum(a, 'alone', t => (passes(t) ? 1 : 0))}/${a.rows.size}** | **${sum(a, 'through', t => (passes(t) ? 1 : 0))}/${a.rows.size}**`).join(' | ')} |`
);
lines.push(`| **checks passing** | ${arms.map(a => `**${sum(a, 'alone', t => t.ok)}/${sum(a, 'alone', t => t.total)}** | **${sum(a, 'through', t => t.ok)}/${sum(a, 'through', t => t.total)}**`).join(' | ')} |`);
const servedNotes = arms
    .map(a => [a, Object.entries(a.served).filter(([, v]) => v.alone || v.through)])
    .filter(([, served]) => served.length)
    .map(([a, served]) => `${a.label}: ${served.map(([k, v]) => `\`${k}\` ${v.alone}× alone, ${v.through}× through mcpfan`).join(', ')}`);
const starNotes = [];
for (const a of arms) {
    for (const [s, r] of a.rows) {
        if (r.required && !passes(r.through)) starNotes.push(`${a.label} ${s}: ${r.upstreamOnly.map(v => `\`${v}\``).join(', ')}`);
    }
}
const table =
    `${lines.join('\n')}\n\n` +
    'Cells: ✓ the scenario passes (no FAILURE, at least one SUCCESS), ✗ it does not; n/m = SUCCESS checks of all its checks ' +
    '(the others are FAILURE, WARNING, SKIPPED or INFO); – 0/0 = it emitted no check; n/a = not in that spec version; ' +
    '(required) = must pass through mcpfan, whatever the upstream alone does.\n' +
    (starNotes.length
        ? `\n✓* = passes through mcpfan apart from \`${SCHEMA}\`, which fails only for violations the upstream has alone too: ` +
          `${starNotes.join('; ')}.\n`
        : '') +
    (servedNotes.length ? `\nRequests mcpfan serves itself, as counted by the upstream (GET /stats) — ${servedNotes.join('. ')}.\n` : '');
fs.writeFileSync(tableFile, table);
console.log('\n=== TABLE (interop_proxy_conformance: alone vs through mcpfan --upstream)\n');
console.log(table);

if (problems.length) {
    console.log(`=== ${problems.length} PROBLEM(S):`);
    for (const p of problems) console.log(`✗ ${p}`);
    process.exit(1);
}
console.log('=== every check that passes alone passes through mcpfan; the required scenarios and checks pass through mcpfan');
