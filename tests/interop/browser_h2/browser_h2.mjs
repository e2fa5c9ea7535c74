// Many listens from one browser page over HTTP/2: Debian's headless Chromium, driven over the
// DevTools protocol on a pipe (../lib/chromium.mjs; Node built-ins only), against mcpfan serving
// TLS (ALPN h2).
//
//   node browser_h2.mjs https://localhost:PORT https://localhost:NO_H2_PORT SPKI_HASH PIDFILE
//
// The test certificate is trusted with --ignore-certificate-errors-spki-list=SPKI_HASH (the
// base64 SHA-256 of the server certificate's public key): Chromium then accepts that one key
// for any certificate error, and nothing else (no --ignore-certificate-errors). It works headless
// on Debian's chromium with a --user-data-dir, which lib/chromium.mjs always gives.
//
// 1. opens https://localhost:PORT/status (mcpfan's own page: an https origin whose CSP allows
//    fetches to 'self'; it keeps polling /status.json on the same connection) and checks that
//    the navigation went over h2;
// 2. in that page (Runtime.evaluate) opens LISTENS listens with fetch(): POST /mcp with the
//    2026-07-28 headers and body, each response body read with a ReadableStream reader and
//    split into SSE events; waits for every acknowledgement (each with its own subscriptionId);
//    every /mcp response came over h2 (Network.responseReceived), mcpfan counts LISTENS open
//    listen streams and mcpfan_h2_connections_open is 1: all on one connection;
// 3. publishes once (Node, POST /v1/publish): every listen receives it exactly once, tagged with
//    its own subscriptionId;
// 4. aborts them all in the page: mcpfan_listen_streams_open goes back to 0;
// 5. the contrast: on a second mcpfan with --no-h2 (HTTP/1.1 only over TLS), the same page code
//    opening CONTRAST_LISTENS listens from https://localhost:NO_H2_PORT/livez gets exactly 6
//    acknowledgements (Chromium's connections per origin) and the rest wait;
// 6. no console error or exception in the pages.
import { createTest, fail, metric, publish, sleep, waitForGauge, withTimeout, QUIET_MS, STEP_TIMEOUT_MS, SUB_ID_KEY } from '../lib/common.mjs';
import { CHROMIUM, startChromium } from '../lib/chromium.mjs';

const NAME = 'interop_browser_h2';
const LISTENS = 100;
const CONTRAST_LISTENS = 10;
const HTTP1_PER_ORIGIN = 6; // Chromium's connection limit per origin over HTTP/1.1
const URI = 'file:///interop/browser-h2/doc.txt';

const [base, noH2Base, spki, pidFile] = process.argv.slice(2);
if (!/^https:\/\/localhost:\d+$/.test(base ?? '') || !/^https:\/\/localhost:\d+$/.test(noH2Base ?? '') || !spki || !pidFile) {
    console.error('usage: node browser_h2.mjs https://localhost:PORT https://localhost:NO_H2_PORT SPKI_HASH PIDFILE');
    process.exit(2);
}

let chrome = null;
const consoleErrors = [];
const mcpResponses = []; // {url, protocol, status} of every /mcp response the page got
const failedLoads = [];

const t = createTest(NAME, {
    report() {
        if (consoleErrors.length) console.error(`--- page errors:\n  ${consoleErrors.join('\n  ')}`);
        if (failedLoads.length) console.error(`--- failed loads:\n  ${failedLoads.slice(0, 20).join('\n  ')}`);
        if (chrome) console.error(`--- chromium stderr (tail):\n${chrome.log().slice(-3000)}`);
    },
    cleanup() {
        chrome?.kill();
    }
});

// Opens `n` listens with fetch() in the page; their state is in window.__listens.
const openListensJs = n => `(() => {
    window.__listens = [];
    for (let i = 0; i < ${n}; ++i) {
        const l = { id: 'browser-h2-' + i, status: 0, messages: [], ended: false, error: null, abort: new AbortController() };
        window.__listens.push(l);
        (async () => {
            try {
                const res = await fetch('/mcp', {
                    method: 'POST',
                    signal: l.abort.signal,
                    headers: {
                        'content-type': 'application/json',
                        accept: 'application/json, text/event-stream',
                        'mcp-protocol-version': '2026-07-28',
                        'mcp-method': 'subscriptions/listen'
                    },
                    body: JSON.stringify({
                        jsonrpc: '2.0', id: l.id, method: 'subscriptions/listen',
                        params: {
                            _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
                            notifications: { resourceSubscriptions: [${JSON.stringify(URI)}] }
                        }
                    })
                });
                l.status = res.status;
                const reader = res.body.getReader();
                const decoder = new TextDecoder();
                let pending = '';
                for (;;) {
                    const { value, done } = await reader.read();
                    if (done) { l.ended = true; break; }
                    pending += decoder.decode(value, { stream: true });
                    let cut;
                    while ((cut = pending.indexOf('\\n\\n')) >= 0) {
                        const event = pending.slice(0, cut);
                        pending = pending.slice(cut + 2);
                        const data = event.split('\\n').filter(x => x.startsWith('data:')).map(x => x.slice(5).trimStart()).join('\\n');
                        if (data) l.messages.push(JSON.parse(data));
                    }
                }
            } catch (e) {
                if (!l.abort.signal.aborted) l.error = String(e);
            }
        })();
    }
    return window.__listens.length;
})()`;

const summaryJs = `window.__listens.map(l => ({ id: l.id, status: l.status, ended: l.ended, error: l.error, messages: l.messages }))`;

// Resolves with the value of `valueJs` once `condJs` holds in the page (checked every 20 ms),
// bounded by `ms`; on a timeout the failure shows `valueJs`.
async function pageWait(session, condJs, valueJs, ms, what) {
    const expression = `new Promise(resolve => { const check = () => (${condJs}) ? resolve(${valueJs}) : setTimeout(check, 20); check(); })`;
    let r;
    try {
        r = await chrome.cdp.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true, timeout: ms }, session, ms + 2000);
    } catch (e) {
        const now = await chrome.cdp.send('Runtime.evaluate', { expression: valueJs, returnByValue: true }, session).catch(() => null);
        fail(`${e.message} (${what}); now: ${JSON.stringify(now?.result?.value)?.slice(0, 3000)}`);
    }
    if (r.exceptionDetails) fail(`${what}: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value;
}

async function evaluate(session, expression, what) {
    const r = await chrome.cdp.send('Runtime.evaluate', { expression, returnByValue: true }, session);
    if (r.exceptionDetails) fail(`${what}: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value;
}

// A fresh page target, attached, with the events this test watches; navigated to `url`.
async function openPage(url) {
    const { targetId } = await chrome.cdp.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId: s } = await chrome.cdp.send('Target.attachToTarget', { targetId, flatten: true });
    const cdp = chrome.cdp;
    cdp.on('Runtime.consoleAPICalled', s, p => {
        if (p.type === 'error' || p.type === 'assert') consoleErrors.push(`${url}: console.${p.type}: ${p.args.map(a => a.value ?? a.description).join(' ')}`);
    });
    cdp.on('Runtime.exceptionThrown', s, p => consoleErrors.push(`${url}: exception: ${p.exceptionDetails.exception?.description ?? p.exceptionDetails.text}`));
    cdp.on('Network.responseReceived', s, p => {
        if (new URL(p.response.url).pathname === '/mcp') mcpResponses.push({ url: p.response.url, protocol: p.response.protocol, status: p.response.status });
    });
    cdp.on('Network.loadingFailed', s, p => failedLoads.push(`${p.type} ${p.errorText}${p.canceled ? ' (canceled)' : ''}`));
    const loaded = new Promise(resolve => cdp.on('Page.loadEventFired', s, resolve));
    for (const domain of ['Page', 'Runtime', 'Network']) await cdp.send(`${domain}.enable`, {}, s);
    const nav = await cdp.send('Page.navigate', { url }, s);
    if (nav.errorText) fail(`navigating to ${url}: ${nav.errorText} (is the certificate's SPKI hash accepted?)`);
    await withTimeout(loaded, STEP_TIMEOUT_MS, `the load event of ${url}`);
    return { targetId, s };
}

async function main() {
    const started = Date.now();
    t.stage = 'start chromium';
    chrome = startChromium({ pidFile, extraArgs: [`--ignore-certificate-errors-spki-list=${spki}`] });
    const version = await chrome.cdp.send('Browser.getVersion');
    console.log(`${NAME}: ${version.product} (${CHROMIUM})`);

    t.stage = 'open /status over https';
    const page = await openPage(`${base}/status`);
    const navProto = await evaluate(page.s, `performance.getEntriesByType('navigation')[0].nextHopProtocol`, 'nextHopProtocol');
    if (navProto !== 'h2') fail(`the page ${base}/status came over '${navProto}', expected h2 (ALPN)`);

    t.stage = `open ${LISTENS} listens with fetch()`;
    await evaluate(page.s, openListensJs(LISTENS), 'opening the listens');
    const acked = await pageWait(page.s, `window.__listens.every(l => l.messages.length >= 1 || l.error)`, summaryJs, STEP_TIMEOUT_MS * 2, `${LISTENS} acknowledgements`);
    for (const l of acked) {
        if (l.error || l.status !== 200) fail(`listen ${l.id}: status ${l.status} error ${l.error}`);
        const ack = l.messages[0];
        if (ack.method !== 'notifications/subscriptions/acknowledged' || ack.params?._meta?.[SUB_ID_KEY] !== l.id) fail(`listen ${l.id}: first message ${JSON.stringify(ack)}`);
    }
    await waitForGauge(base, 'mcpfan_listen_streams_open', LISTENS);
    const h2Open = await metric(base, 'mcpfan_h2_connections_open');
    const mcpOver = [...new Set(mcpResponses.map(r => r.protocol))];
    if (mcpResponses.length !== LISTENS || mcpOver.join() !== 'h2') fail(`${mcpResponses.length} /mcp responses seen over ${JSON.stringify(mcpOver)}, expected ${LISTENS} over h2`);
    if (h2Open !== 1) fail(`mcpfan_h2_connections_open is ${h2Open} with ${LISTENS} listens open from one page, expected 1`);
    console.log(`${NAME}: ${LISTENS} listens acknowledged over h2, mcpfan_h2_connections_open=${h2Open}, ${Date.now() - started} ms`);

    t.stage = 'publish once';
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI, _meta: { 'interop/n': 1 } } });
    await pageWait(page.s, `window.__listens.every(l => l.messages.length >= 2 || l.error)`, 'true', STEP_TIMEOUT_MS, `the publish on all ${LISTENS} listens`);
    await sleep(QUIET_MS);
    for (const l of await evaluate(page.s, summaryJs, 'the listens')) {
        const m = l.messages[1];
        if (l.error || l.messages.length !== 2) fail(`listen ${l.id}: error ${l.error}, ${l.messages.length - 1} notifications: ${JSON.stringify(l.messages.slice(1))}`);
        if (m.method !== 'notifications/resources/updated' || m.params?.uri !== URI || m.params._meta?.[SUB_ID_KEY] !== l.id || m.params._meta['interop/n'] !== 1)
            fail(`listen ${l.id} received ${JSON.stringify(m)}`);
    }

    t.stage = 'abort the listens in the page';
    await evaluate(page.s, `window.__listens.forEach(l => l.abort.abort()), true`, 'aborting');
    await waitForGauge(base, 'mcpfan_listen_streams_open', 0);
    await chrome.cdp.send('Target.closeTarget', { targetId: page.targetId });

    t.stage = `contrast: ${CONTRAST_LISTENS} listens over HTTP/1.1 (--no-h2)`;
    const page1 = await openPage(`${noH2Base}/livez`);
    const proto1 = await evaluate(page1.s, `performance.getEntriesByType('navigation')[0].nextHopProtocol`, 'nextHopProtocol');
    if (proto1 !== 'http/1.1') fail(`${noH2Base}/livez came over '${proto1}', expected http/1.1 (--no-h2)`);
    await evaluate(page1.s, openListensJs(CONTRAST_LISTENS), 'opening the listens');
    await pageWait(page1.s, `window.__listens.filter(l => l.messages.length >= 1).length >= ${HTTP1_PER_ORIGIN}`, 'true', STEP_TIMEOUT_MS, `${HTTP1_PER_ORIGIN} acknowledgements over HTTP/1.1`);
    await sleep(1000);
    const contrast = await evaluate(page1.s, summaryJs, 'the listens');
    const ackedOver1 = contrast.filter(l => l.messages.length >= 1).length;
    if (ackedOver1 !== HTTP1_PER_ORIGIN) fail(`over HTTP/1.1 ${ackedOver1} of ${CONTRAST_LISTENS} listens were acknowledged, expected Chromium's ${HTTP1_PER_ORIGIN} per origin`);
    await evaluate(page1.s, `window.__listens.forEach(l => l.abort.abort()), true`, 'aborting');
    await waitForGauge(noH2Base, 'mcpfan_listen_streams_open', 0);

    t.stage = 'no console errors';
    if (consoleErrors.length) fail(`the pages logged errors:\n  ${consoleErrors.join('\n  ')}`);

    t.stage = 'close chromium';
    await chrome.close();
    console.log(
        `${NAME}: PASS — ${LISTENS} fetch() listens from one page on one h2 connection (mcpfan_h2_connections_open=1), ` +
            `each got the publish once; over HTTP/1.1 ${ackedOver1} of ${CONTRAST_LISTENS} were served (the rest stalled); ${Date.now() - started} ms`
    );
}

t.run(main);
