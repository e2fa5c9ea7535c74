// Interop test: the official MCP TypeScript SDK v2 client (@modelcontextprotocol/client, pinned
// in package.json) over its stdio transport, spawning `mcpfan --stdio --listen 127.0.0.1:0`.
//
//   node client.mjs /path/to/mcpfan
//
// Written the way an SDK user would write it: Client + StdioClientTransport with
// versionNegotiation 'auto', handlers via setNotificationHandler, client.listen(), sub.close(),
// client.close(). The same mcpfan process also serves HTTP; the test publishes to it over
// HTTP (POST /v1/publish, port from the process's stderr line, which the transport exposes
// with `stderr: 'pipe'`) and reads its /metrics.
//
// To show exactly what crossed the pipes, the test wraps two methods of the SDK's
// StdioClientTransport prototype (send, start) to log every line written to and read from
// each child — the disposable probe sibling included (FINDINGS.md §2) — and watches the
// session child's exit. It does not change what the SDK sends.
//
// Exit 0 and one summary line on success (SDKV2_STDIO_VERBOSE=1 also prints the pipe log);
// exit 1 with "interop_sdk_v2_stdio: FAIL at stage '...': ..." otherwise.

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { appendFileSync } from 'node:fs';
import { LISTENING_RE, QUIET_MS, STEP_TIMEOUT_MS, SUB_ID_KEY, TestFailure, createTest, fail, short, sleep, waitUntil, withTimeout } from '../lib/common.mjs';
import { canon, checkDiscover, collectNotifications, publish, waitForGauge } from '../lib/common.mjs';

const NAME = 'interop_sdk_v2_stdio';
const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const EXPECTED_VERSION = '2026-07-28';
const URI_A = 'file:///interop/stdio/a.txt';
const URI_OTHER = 'file:///interop/stdio/b.txt';

const SDK_CLOSE_GRACE_MS = 2000; // StdioClientTransport.close(): stdin.end(), then SIGTERM after 2 s

// ---------------------------------------------------------------------------------------
// plumbing: pipe log and children (failure reporting and bounded waits: ../lib/common.mjs)

const pipeLog = []; // human-readable log of every line on every child's stdin/stdout
const children = new Map(); // pid -> {role, proc, in: [lines], out: [lines], exit, signalsSent: []}
let sessionStderr = '';

function killLeftovers() {
    for (const [pid, c] of children) {
        if (c.exit === undefined) {
            try {
                process.kill(pid, 'SIGKILL');
            } catch {}
        }
    }
}

function dumpPipes() {
    console.error('--- stdio lines (→ written to the child\'s stdin, ← read from its stdout):');
    for (const line of pipeLog) console.error(`  ${line}`);
    for (const [pid, c] of children) console.error(`--- child ${pid} (${c.role}): exit ${JSON.stringify(c.exit)}, signals sent by the SDK ${JSON.stringify(c.signalsSent)}`);
    if (sessionStderr) console.error(`--- session child's stderr:\n${short(sessionStderr, 4000)}`);
}

const t = createTest(NAME, { report: dumpPipes, cleanup: killLeftovers });

// --- the pipe recorder (wraps StdioClientTransport.prototype.start / send) -------------------
// The probe sibling is built from the same class with stderr 'ignore' (FINDINGS.md §2), so
// the role is told apart by that parameter.
const t0 = Date.now();
const origStart = StdioClientTransport.prototype.start;
const origSend = StdioClientTransport.prototype.send;
StdioClientTransport.prototype.start = async function (...args) {
    await origStart.apply(this, args);
    const proc = this._process;
    const role = this._serverParams?.stderr === 'ignore' ? 'probe sibling' : 'session';
    const c = { role, proc, in: [], out: [], exit: undefined, signalsSent: [] };
    children.set(proc.pid, c);
    // run.sh reaps whatever is left if this program itself is killed (timeout).
    if (process.env.MCPFAN_PIDFILE) appendFileSync(process.env.MCPFAN_PIDFILE, `${proc.pid}\n`);
    pipeLog.push(`+${Date.now() - t0}ms spawned ${role} child pid ${proc.pid}: ${this._serverParams.command} ${(this._serverParams.args ?? []).join(' ')}`);
    const origKill = proc.kill.bind(proc);
    proc.kill = sig => {
        c.signalsSent.push(sig ?? 'SIGTERM');
        pipeLog.push(`+${Date.now() - t0}ms SDK sends ${sig ?? 'SIGTERM'} to ${role} ${proc.pid}`);
        return origKill(sig);
    };
    const origEnd = proc.stdin.end.bind(proc.stdin);
    proc.stdin.end = (...a) => {
        pipeLog.push(`+${Date.now() - t0}ms SDK closes the stdin of ${role} ${proc.pid} (EOF)`);
        c.stdinClosedAt = Date.now();
        return origEnd(...a);
    };
    let buf = '';
    proc.stdout.on('data', chunk => {
        buf += chunk.toString('utf8');
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            c.out.push(line);
            pipeLog.push(`+${Date.now() - t0}ms ${role} ${proc.pid} ← ${short(line, 1500)}`);
        }
    });
    proc.on('exit', (code, signal) => {
        c.exit = { code, signal, atMs: Date.now() };
        pipeLog.push(`+${Date.now() - t0}ms ${role} ${proc.pid} exited code=${code} signal=${signal}`);
    });
};
StdioClientTransport.prototype.send = function (message, ...rest) {
    const pid = this._process?.pid;
    const c = children.get(pid);
    const line = JSON.stringify(message);
    if (c) c.in.push(line);
    pipeLog.push(`+${Date.now() - t0}ms ${c?.role ?? '?'} ${pid} → ${short(line, 1500)}`);
    return origSend.call(this, message, ...rest);
};

// ---------------------------------------------------------------------------------------
// checks

function parseLine(line, where) {
    try {
        return JSON.parse(line);
    } catch {
        fail(`${where}: a line on stdout is not JSON (design §2.3: one JSON-RPC message per line): ${JSON.stringify(short(line))}`);
    }
}

// ---------------------------------------------------------------------------------------
// the test

async function main() {
    const bin = process.argv[2];
    if (!bin) {
        console.error('usage: node client.mjs /path/to/mcpfan');
        process.exit(2);
    }

    // -- connect: probe on a sibling, then the session child ---------------------------------
    t.stage = 'connect';
    const transport = new StdioClientTransport({
        command: bin,
        args: ['--stdio', '--listen', '127.0.0.1:0', '--workers', '1'],
        stderr: 'pipe'
    });
    // With stderr 'pipe' the transport hands out a PassThrough at once (before start()).
    transport.stderr.on('data', d => (sessionStderr += d.toString('utf8')));

    const client = new Client(
        { name: 'mcpfan-interop-sdk-v2-stdio', version: '1.0.0' },
        { versionNegotiation: { mode: 'auto', probe: { timeoutMs: STEP_TIMEOUT_MS } } }
    );
    client.onerror = t.onClientError;
    const received = collectNotifications(client);

    try {
        await withTimeout(client.connect(transport, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS * 2, 'client.connect() (probe sibling + session child)');
    } catch (e) {
        if (e instanceof TestFailure) throw e;
        fail(`client.connect() failed: ${e?.message ?? e}`);
    }
    const sibling = [...children.values()].find(c => c.role === 'probe sibling');
    const session = [...children.values()].find(c => c.role === 'session');
    const negotiated = client.getNegotiatedProtocolVersion();
    if (negotiated !== EXPECTED_VERSION || client.getProtocolEra() !== 'modern')
        fail(
            `negotiated ${negotiated} (era ${client.getProtocolEra()}), expected ${EXPECTED_VERSION}. On stdio the SDK falls back to a 2025 ` +
                `'initialize' when the probe sibling's server/discover gets no valid result, times out, or the sibling exits (FINDINGS.md §2). ` +
                `Probe sibling's lines: in ${JSON.stringify(sibling?.in)} out ${JSON.stringify(sibling?.out)}, exit ${JSON.stringify(sibling?.exit)}`
        );
    checkDiscover(client.getDiscoverResult(), 'probe discover result', [EXPECTED_VERSION]);
    if (!sibling) fail('no probe sibling was spawned (SDK changed? FINDINGS.md §2)');
    if (!session) fail('no session child was spawned');
    if (sibling.in.length !== 1 || parseLine(sibling.in[0], 'sibling stdin').method !== 'server/discover')
        fail(`probe sibling got ${JSON.stringify(sibling.in)}, expected exactly one server/discover line`);

    // The HTTP port of the session child (the sibling's stderr is discarded by the SDK).
    t.stage = 'port';
    let base;
    await waitUntil(
        () => {
            const m = LISTENING_RE.exec(sessionStderr);
            if (m) base = `http://${m[1]}`;
            return m !== null;
        },
        STEP_TIMEOUT_MS,
        "the session child's 'mcpfan: listening on HOST:PORT' stderr line"
    ).catch(e => fail(`${e.message}; stderr so far: ${JSON.stringify(short(sessionStderr))}`));
    if (!/^http:\/\/(127\.\d+\.\d+\.\d+|\[::1\]):\d+$/.test(base)) fail(`session child listens on ${base}, not loopback`);

    // -- listen A: the first line the session child ever sees --------------------------------
    t.stage = 'listen';
    const filterA = { resourceSubscriptions: [URI_A], toolsListChanged: true };
    let subA;
    try {
        subA = await withTimeout(client.listen(filterA, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.listen() acknowledgement');
    } catch (e) {
        if (e instanceof TestFailure) fail(`${e.message}; session child stdout so far: ${JSON.stringify(session.out)}`);
        fail(`client.listen() failed: ${e?.message ?? e}`);
    }
    const first = parseLine(session.in[0] ?? 'null', 'session stdin');
    if (first?.method !== 'subscriptions/listen' || typeof first.id !== 'string')
        fail(`the session child's first stdin line is ${JSON.stringify(session.in[0])}, expected the enveloped subscriptions/listen (no server/discover, no initialize before it)`);
    if (first.params?._meta?.[PROTOCOL_VERSION_KEY] !== EXPECTED_VERSION) fail(`listen line lacks the envelope: ${session.in[0]}`);
    const idA = first.id;
    if (canon(subA.honoredFilter) !== canon(filterA)) fail(`acknowledged filter ${JSON.stringify(subA.honoredFilter)} != requested ${JSON.stringify(filterA)}`);
    const ackLine = session.out.map(l => parseLine(l, 'session stdout')).find(m => m?.method === 'notifications/subscriptions/acknowledged');
    if (ackLine?.params?._meta?.[SUB_ID_KEY] !== idA) fail(`ack carries subscriptionId ${JSON.stringify(ackLine?.params?._meta?.[SUB_ID_KEY])}, expected ${JSON.stringify(idA)}`);
    await waitForGauge(base, 'mcpfan_subscriptions_active', 1);

    // -- publish over HTTP, receive on stdout ---------------------------------------------
    t.stage = 'publish';
    const pubA = { uri: URI_A, _meta: { 'test/seq': 1, 'origin/rev': 'r1' } };
    await publish(base, { method: 'notifications/resources/updated', params: pubA });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_OTHER, _meta: { 'test/seq': 2 } } });
    await publish(base, { method: 'notifications/prompts/list_changed' });
    await publish(base, { method: 'notifications/tools/list_changed' });
    t.stage = 'receive';
    await waitUntil(() => received.some(n => n.method === 'notifications/tools/list_changed'), STEP_TIMEOUT_MS, 'notifications/tools/list_changed on stdout').catch(e =>
        fail(`${e.message}; received so far: ${JSON.stringify(received)}`)
    );
    await sleep(QUIET_MS);
    if (received.length !== 2 || received[0].method !== 'notifications/resources/updated' || received[1].method !== 'notifications/tools/list_changed')
        fail(`expected exactly [resources/updated ${URI_A}, tools/list_changed], got ${JSON.stringify(received)}`);
    const wantA = { ...pubA, _meta: { ...pubA._meta, [SUB_ID_KEY]: idA } };
    if (canon(received[0].params) !== canon(wantA)) fail(`resources/updated params ${JSON.stringify(received[0].params)} != expected ${JSON.stringify(wantA)} (params verbatim + subscriptionId, design §3)`);
    if (canon(received[1].params ?? {}) !== canon({ _meta: { [SUB_ID_KEY]: idA } })) fail(`tools/list_changed params ${JSON.stringify(received[1].params)}`);

    // -- a second listen on the same connection, then cancel the first ------------------------
    t.stage = 'second listen';
    const subB = await withTimeout(client.listen({ promptsListChanged: true }, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'second client.listen() acknowledgement');
    const lineB = session.in.map(l => JSON.parse(l)).filter(m => m.method === 'subscriptions/listen')[1];
    const idB = lineB?.id;
    if (typeof idB !== 'string' || idB === idA) fail(`second listen id ${JSON.stringify(idB)}`);
    await waitForGauge(base, 'mcpfan_subscriptions_active', 2);

    t.stage = 'cancel';
    const nIn = session.in.length;
    await withTimeout(subA.close(), STEP_TIMEOUT_MS, 'subscription A close()');
    const causeA = await withTimeout(subA.closed, STEP_TIMEOUT_MS, 'subscription A closed');
    if (causeA !== 'local') fail(`subscription A closed with cause '${causeA}', expected 'local'`);
    const cancelLine = session.in.slice(nIn).map(l => JSON.parse(l)).find(m => m.method === 'notifications/cancelled');
    if (cancelLine?.params?.requestId !== idA) fail(`after sub.close() the SDK wrote ${JSON.stringify(session.in.slice(nIn))}, expected notifications/cancelled {requestId: ${JSON.stringify(idA)}}`);
    if ('id' in cancelLine) fail('notifications/cancelled carries an id (SDK changed?)');
    await waitForGauge(base, 'mcpfan_subscriptions_active', 1);

    // After the cancel: A's updates must not arrive; B's prompts/list_changed is the marker.
    const nRecv = received.length;
    const nOut = session.out.length;
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { 'test/seq': 3 } } });
    await publish(base, { method: 'notifications/tools/list_changed' });
    await publish(base, { method: 'notifications/prompts/list_changed' });
    await waitUntil(() => received.slice(nRecv).some(n => n.method === 'notifications/prompts/list_changed'), STEP_TIMEOUT_MS, 'prompts/list_changed for the second listen').catch(e =>
        fail(`${e.message}; received since the cancel: ${JSON.stringify(received.slice(nRecv))}`)
    );
    await sleep(QUIET_MS);
    const since = received.slice(nRecv);
    if (since.length !== 1 || canon(since[0].params ?? {}) !== canon({ _meta: { [SUB_ID_KEY]: idB } }))
        fail(`after cancelling ${JSON.stringify(idA)} expected only prompts/list_changed for ${JSON.stringify(idB)}, got ${JSON.stringify(since)}`);
    // A server must not answer a notification; nothing but notifications for idB may have appeared.
    for (const l of session.out.slice(nOut)) {
        const m = JSON.parse(l);
        if (m.params?._meta?.[SUB_ID_KEY] !== idB || 'id' in m) fail(`unexpected line on stdout after the cancel: ${l}`);
    }

    // -- close: EOF on stdin, the process must exit 0 by itself ------------------------------
    t.stage = 'close';
    await withTimeout(subB.close(), STEP_TIMEOUT_MS, 'subscription B close()');
    const errorsBeforeClose = t.clientErrors.length;
    const proc = session.proc;
    await withTimeout(client.close(), STEP_TIMEOUT_MS, 'client.close()');
    await waitUntil(() => session.exit !== undefined, STEP_TIMEOUT_MS, 'the session child to exit after EOF on stdin');
    const exitAfterMs = session.exit.atMs - (session.stdinClosedAt ?? session.exit.atMs);
    if (session.signalsSent.length > 0)
        fail(`mcpfan did not exit within ${SDK_CLOSE_GRACE_MS} ms of EOF on stdin; the SDK had to send ${session.signalsSent.join(', ')} (design §2.3: EOF ends the connection)`);
    if (session.exit.code !== 0 || session.exit.signal !== null) fail(`mcpfan exited with code ${session.exit.code} signal ${session.exit.signal} after EOF, expected 0`);
    if (proc.exitCode !== 0) fail(`exit code ${proc.exitCode}`);
    // The probe sibling must be gone too (the SDK reaps it during connect()).
    if (sibling.exit === undefined) fail(`probe sibling ${sibling.proc.pid} is still running`);

    const lastLines = session.out.slice(-2).map(l => JSON.parse(l));
    const completes = session.out.map(l => JSON.parse(l)).filter(m => 'id' in m && m.result?.resultType === 'complete');
    if (t.clientErrors.length > 0) fail(`the SDK reported ${t.clientErrors.length} error(s) through client.onerror`);
    if (process.env.SDKV2_STDIO_VERBOSE) {
        console.error('--- stdio lines (SDKV2_STDIO_VERBOSE):');
        for (const line of pipeLog) console.error(`  ${line}`);
    }
    console.log(
        `${NAME}: note: probe sibling exit ${JSON.stringify({ code: sibling.exit.code, signal: sibling.exit.signal })}, signals sent to it ${JSON.stringify(sibling.signalsSent)}; ` +
            `session child wrote ${completes.length} final result line(s) (${JSON.stringify(lastLines.map(m => m.id ?? m.method))} last)`
    );
    console.log(
        `${NAME}: PASS — @modelcontextprotocol/client negotiated ${negotiated} over stdio (probe on sibling ${sibling.proc.pid}), ` +
            `listen ${JSON.stringify(idA)} was the session child's first line, 2/2 notifications via HTTP publish, cancel honoured, ` +
            `second listen ${JSON.stringify(idB)} demultiplexed, exit 0 ${exitAfterMs} ms after EOF (errors before close: ${errorsBeforeClose})`
    );
}

t.run(main);
