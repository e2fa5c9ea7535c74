// The live status page (GET /status) in a real headless Chromium (Debian's), driven over the
// DevTools protocol on a pipe (--remote-debugging-pipe: no port, no npm package):
//
//   node status_page.mjs http://127.0.0.1:PORT ARTIFACT_DIR PIDFILE
//
// 1. opens /status and waits (on DOM mutations, bounded) until the page shows the server's
//    numbers from its own polls of /status.json;
// 2. opens a listen, publishes PUBLISHES times (spread over a few polls) and reads each
//    delivery, makes one limit hit (a listen over --max-uris-per-listen 2), and waits until
//    the page's totals, "now" gauges and per-second lines show them;
// 3. takes a screenshot (ARTIFACT_DIR/status.png; its path is printed);
// 4. checks that the page logged no console error or exception (a CSP violation is one) and
//    that every request it made went to the server's origin.
// Chromium's PID is written to PIDFILE so that run.sh stops it even if this program dies.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { createTest, fail, loopbackBaseArg, publish, sleep, withTimeout, STEP_TIMEOUT_MS, SUB_ID_KEY } from '../lib/common.mjs';
import { CHROMIUM, startChromium } from '../lib/chromium.mjs';

const NAME = 'interop_status_page';
const PUBLISHES = 30;
const URI = 'file:///status-page/doc.txt';

const base = loopbackBaseArg('status_page.mjs');
const artifactDir = process.argv[3];
const pidFile = process.argv[4];
if (!artifactDir || !pidFile) {
    console.error('usage: node status_page.mjs http://127.0.0.1:PORT ARTIFACT_DIR PIDFILE');
    process.exit(2);
}

const consoleErrors = []; // what the page logged at error level, or threw
const requests = []; // every URL the page asked for
let chrome = null; // ../lib/chromium.mjs

const t = createTest(NAME, {
    report() {
        if (consoleErrors.length) console.error(`--- page errors:\n  ${consoleErrors.join('\n  ')}`);
        console.error(`--- page requests (${requests.length}):\n  ${requests.slice(0, 40).join('\n  ')}`);
        if (chrome?.log()) console.error(`--- chromium stderr (tail):\n${chrome.log().slice(-3000)}`);
    },
    cleanup() {
        chrome?.kill();
    }
});

// ---------------------------------------------------------------------------------------
// The page

// Resolves with `valueExpr` once `condExpr` holds in the page: checked now and on every DOM
// mutation (the page changes the DOM after each poll), bounded by `ms`.
async function waitForPage(cdp, session, condExpr, valueExpr, ms, what) {
    const expression = `new Promise(resolve => {
        const check = () => { if (${condExpr}) { obs.disconnect(); resolve(${valueExpr}); } };
        const obs = new MutationObserver(check);
        obs.observe(document.documentElement, { subtree: true, childList: true, characterData: true, attributes: true });
        check();
    })`;
    const evaluated = cdp.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true, timeout: ms }, session);
    let r;
    try {
        r = await withTimeout(evaluated, ms + 1000, what);
    } catch (e) {
        const shown = await cdp.send('Runtime.evaluate', { expression: 'document.body.innerText', returnByValue: true }, session).catch(() => null);
        fail(`${e.message}; the page shows:\n${shown?.result?.value ?? '(unreadable)'}`);
    }
    if (r.exceptionDetails) fail(`${what}: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value;
}

const text = id => `document.getElementById(${JSON.stringify(id)}).textContent`;
const num = id => `Number(${text(id)}.replace(/,/g, ''))`;
// The highest point of a rate line: its polyline's y is 100 at zero.
const lineTop = key =>
    `Math.min(100, ...(document.getElementById('rate-${key}').closest('.card').querySelector('polyline').getAttribute('points') || '')
        .split(' ').filter(Boolean).map(p => Number(p.split(',')[1])))`;

async function statusJson() {
    const r = await withTimeout(fetch(`${base}/status.json`), STEP_TIMEOUT_MS, 'GET /status.json');
    if (r.status !== 200) fail(`GET /status.json answered ${r.status}`);
    return r.json();
}

// ---------------------------------------------------------------------------------------
// A listen (2026-07-28) read from Node: the acknowledgement, then the deliveries.

async function openListen(id, uris) {
    const abort = new AbortController();
    const res = await withTimeout(
        fetch(`${base}/mcp`, {
            method: 'POST',
            signal: abort.signal,
            headers: {
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                'mcp-protocol-version': '2026-07-28',
                'mcp-method': 'subscriptions/listen'
            },
            body: JSON.stringify({
                jsonrpc: '2.0',
                id,
                method: 'subscriptions/listen',
                params: {
                    _meta: {
                        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                        'io.modelcontextprotocol/clientCapabilities': {}
                    },
                    notifications: { resourceSubscriptions: uris }
                }
            })
        }),
        STEP_TIMEOUT_MS,
        'POST /mcp subscriptions/listen'
    );
    const messages = [];
    let waiter = null;
    if ((res.headers.get('content-type') || '').startsWith('text/event-stream')) {
        (async () => {
            const decoder = new TextDecoder();
            let pendingText = '';
            try {
                for await (const chunk of res.body) {
                    pendingText += decoder.decode(chunk, { stream: true });
                    let cut;
                    while ((cut = pendingText.indexOf('\n\n')) >= 0) {
                        const event = pendingText.slice(0, cut);
                        pendingText = pendingText.slice(cut + 2);
                        const data = event.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n');
                        if (data) messages.push(JSON.parse(data));
                        waiter?.();
                    }
                }
            } catch {
                // aborted at the end
            }
        })();
    }
    return {
        res,
        messages,
        async waitCount(n, what) {
            const deadline = Date.now() + STEP_TIMEOUT_MS;
            while (messages.length < n) {
                if (Date.now() > deadline) fail(`timed out waiting for ${what}: ${messages.length} of ${n} messages`);
                await new Promise(r => {
                    waiter = r;
                    setTimeout(r, 100);
                });
            }
        },
        close() {
            abort.abort();
        }
    };
}

// ---------------------------------------------------------------------------------------

async function main() {
    t.stage = 'start chromium';
    mkdirSync(artifactDir, { recursive: true });
    chrome = startChromium({ pidFile });
    const cdp = chrome.cdp;
    const version = await cdp.send('Browser.getVersion');
    console.log(`${NAME}: ${version.product} (${CHROMIUM})`);

    t.stage = 'attach to the page';
    const { targetInfos } = await cdp.send('Target.getTargets');
    const pageTarget = targetInfos.find(i => i.type === 'page');
    if (!pageTarget) fail(`no page target in ${JSON.stringify(targetInfos)}`);
    const { sessionId: s } = await cdp.send('Target.attachToTarget', { targetId: pageTarget.targetId, flatten: true });
    cdp.on('Runtime.consoleAPICalled', s, p => {
        if (p.type === 'error' || p.type === 'assert') {
            consoleErrors.push(`console.${p.type}: ${p.args.map(a => a.value ?? a.description).join(' ')}`);
        }
    });
    cdp.on('Runtime.exceptionThrown', s, p => consoleErrors.push(`exception: ${p.exceptionDetails.exception?.description ?? p.exceptionDetails.text}`));
    cdp.on('Log.entryAdded', s, p => {
        if (p.entry.level === 'error') consoleErrors.push(`${p.entry.source}: ${p.entry.text} ${p.entry.url ?? ''}`);
    });
    cdp.on('Network.requestWillBeSent', s, p => requests.push(p.request.url));
    const loaded = new Promise(resolve => cdp.on('Page.loadEventFired', s, resolve));
    for (const domain of ['Page', 'Runtime', 'Log', 'Network']) await cdp.send(`${domain}.enable`, {}, s);
    await cdp.send('Emulation.setDeviceMetricsOverride', { width: 1100, height: 900, deviceScaleFactor: 1, mobile: false }, s);

    t.stage = 'open /status';
    const nav = await cdp.send('Page.navigate', { url: `${base}/status` }, s);
    if (nav.errorText) fail(`navigating to ${base}/status: ${nav.errorText}`);
    await withTimeout(loaded, STEP_TIMEOUT_MS, 'the load event of /status');

    t.stage = "the page shows the server's numbers";
    const before = await statusJson();
    const shown = await waitForPage(
        cdp,
        s,
        `document.body.dataset.state === 'live' && Number(document.body.dataset.polls) >= 2 && ${text('version')} !== '?'`,
        `({ version: ${text('version')}, workers: ${num('workers')}, published: ${num('total-published')},
            deliveries: ${num('total-deliveries')}, streams: ${num('now-streams')},
            tenants: [...document.querySelectorAll('#tenants td:first-child')].map(td => td.textContent) })`,
        STEP_TIMEOUT_MS,
        'the page to go live'
    );
    if (shown.version !== before.version) fail(`page shows version ${shown.version}, server says ${before.version}`);
    if (shown.workers !== before.workers) fail(`page shows ${shown.workers} workers, server says ${before.workers}`);
    if (shown.published !== before.counters.published || shown.deliveries !== before.counters.deliveries) {
        fail(`page shows published ${shown.published} deliveries ${shown.deliveries}, server says ${JSON.stringify(before.counters)}`);
    }
    if (!shown.tenants.includes('default')) fail(`the tenant table lacks "default": ${JSON.stringify(shown.tenants)}`);
    console.log(`${NAME}: live: ${JSON.stringify(shown)}`);

    t.stage = 'a listen appears on the page';
    const listen = await openListen('status-page', [URI]);
    if (listen.res.status !== 200) fail(`listen answered ${listen.res.status}`);
    await listen.waitCount(1, 'the acknowledgement');
    await waitForPage(cdp, s, `${num('now-streams')} === 1 && ${num('now-subscriptions')} === 1`, 'true', STEP_TIMEOUT_MS,
        'the page to show one stream and one subscription');

    t.stage = `publish ${PUBLISHES} times`;
    for (let i = 0; i < PUBLISHES; ++i) {
        await publish(base, { method: 'notifications/resources/updated', params: { uri: URI, _meta: { 'status-page/n': i } } });
        await sleep(100); // spread over a few polls: the lines get a shape
    }
    await listen.waitCount(1 + PUBLISHES, `${PUBLISHES} deliveries`);
    const last = listen.messages[PUBLISHES];
    if (last.params?._meta?.[SUB_ID_KEY] !== 'status-page' || last.params._meta['status-page/n'] !== PUBLISHES - 1) {
        fail(`last delivery is ${JSON.stringify(last)}`);
    }

    t.stage = 'one limit hit (--max-uris-per-listen 2)';
    const refused = await openListen('too-many', ['file:///a', 'file:///b', 'file:///c']);
    const refusedBody = await refused.res.text();
    if (refused.res.status === 200 && !refusedBody.includes('"error"')) fail(`a listen over the URI bound was not refused: ${refusedBody}`);

    t.stage = 'the page counts the publishes, deliveries and the limit hit';
    const want = {
        published: before.counters.published + PUBLISHES,
        deliveries: before.counters.deliveries + PUBLISHES,
        limit_hits: before.counters.limit_hits + 1
    };
    const moved = await waitForPage(
        cdp,
        s,
        `${num('total-published')} === ${want.published} && ${num('total-deliveries')} === ${want.deliveries} &&
         ${num('total-limit_hits')} === ${want.limit_hits} && ${lineTop('published')} < 100 && ${lineTop('deliveries')} < 100 &&
         ${lineTop('limit_hits')} < 100`,
        `({ published: ${num('total-published')}, deliveries: ${num('total-deliveries')}, limit_hits: ${num('total-limit_hits')},
            rate_published: ${text('rate-published')}, limits: document.getElementById('limits').textContent })`,
        STEP_TIMEOUT_MS,
        `the page to show ${JSON.stringify(want)} and rate lines above zero`
    );
    if (!moved.limits.includes('uris_per_listen')) fail(`the limit list does not name uris_per_listen: ${moved.limits}`);
    console.log(`${NAME}: moved: ${JSON.stringify(moved)}`);

    t.stage = 'screenshot';
    const shot = await cdp.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true }, s);
    const png = join(artifactDir, 'status.png');
    writeFileSync(png, Buffer.from(shot.data, 'base64'));
    console.log(`${NAME}: screenshot ${png}`);

    t.stage = 'no console errors, no request outside the server';
    listen.close();
    if (consoleErrors.length) fail(`the page logged errors:\n  ${consoleErrors.join('\n  ')}`);
    const foreign = requests.filter(u => !u.startsWith(`${base}/`) && !u.startsWith('data:'));
    if (foreign.length) fail(`requests outside ${base}: ${foreign.join(', ')}`);
    if (!requests.includes(`${base}/status`) || !requests.includes(`${base}/status.json`)) {
        fail(`expected requests for /status and /status.json, saw ${requests.join(', ')}`);
    }
    console.log(`${NAME}: ${requests.length} requests, all to ${base}; no console errors`);

    t.stage = 'close chromium';
    await chrome.close();
    console.log(`${NAME}: PASS`);
}

t.run(main);
