// Debian's headless Chromium driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: no port, no npm package), for the browser interop tests. Node
// built-ins only. Used by status_page and browser_h2.
//
//   const chrome = startChromium({ pidFile, extraArgs });   // PID appended to pidFile
//   const cdp = chrome.cdp;                                 // cdp.send(method, params, sessionId), cdp.on(event, sessionId, fn)
//   chrome.log()                                            // its stderr (tail)
//   chrome.kill()                                           // SIGKILL if still running
//   await chrome.close()                                    // Browser.close, bounded wait for the exit
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { STEP_TIMEOUT_MS, withTimeout } from './common.mjs';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export function startChromium({ pidFile, extraArgs = [] }) {
    // In run.sh's work folder (beside PIDFILE): removed by run.sh once Chromium is stopped.
    const userDataDir = mkdtempSync(join(dirname(pidFile), 'chromium-profile-'));
    const args = [
        '--headless=new',
        '--disable-gpu',
        '--remote-debugging-pipe',
        `--user-data-dir=${userDataDir}`,
        // This machine's network is closed: no background traffic to anyone's servers.
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-quic',
        '--disable-extensions',
        '--disable-default-apps',
        '--no-first-run',
        '--no-default-browser-check',
        '--no-proxy-server',
        '--window-size=1100,900',
        ...extraArgs,
        'about:blank'
    ];
    if (process.getuid && process.getuid() === 0) args.unshift('--no-sandbox'); // root: no setuid sandbox
    const browser = spawn(CHROMIUM, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
    appendFileSync(pidFile, `${browser.pid}\n`);
    let log = '';
    browser.stderr.on('data', d => {
        log = (log + d.toString()).slice(-20000);
    });
    browser.on('error', e => {
        log += `\nspawn ${CHROMIUM}: ${e.message}`;
    });
    const running = () => browser.exitCode === null && browser.signalCode === null;
    const cdp = makeCdp(browser.stdio[3], browser.stdio[4]);
    return {
        browser,
        cdp,
        args,
        log: () => log,
        kill() {
            if (running()) browser.kill('SIGKILL');
        },
        async close() {
            await cdp.send('Browser.close').catch(() => {}); // the answer may not come before the pipe closes
            const exited = new Promise(resolve => (running() ? browser.on('exit', resolve) : resolve()));
            await withTimeout(exited, STEP_TIMEOUT_MS, 'chromium to exit');
        }
    };
}

// fd 3 carries commands to the browser, fd 4 its answers and events, each message a JSON text
// ended by a NUL byte.
function makeCdp(toBrowser, fromBrowser) {
    let nextId = 1;
    const pending = new Map(); // id -> {resolve, reject, method}
    const listeners = []; // {method, sessionId, fn}
    let buf = Buffer.alloc(0);
    fromBrowser.on('data', chunk => {
        buf = Buffer.concat([buf, chunk]);
        for (let end = buf.indexOf(0); end >= 0; end = buf.indexOf(0)) {
            const msg = JSON.parse(buf.subarray(0, end).toString('utf8'));
            buf = buf.subarray(end + 1);
            if (msg.id !== undefined) {
                const p = pending.get(msg.id);
                pending.delete(msg.id);
                if (!p) continue;
                if (msg.error) p.reject(new Error(`${p.method}: ${msg.error.message}`));
                else p.resolve(msg.result);
            } else {
                for (const l of listeners) {
                    if (l.method === msg.method && l.sessionId === msg.sessionId) l.fn(msg.params);
                }
            }
        }
    });
    fromBrowser.on('close', () => {
        for (const p of pending.values()) p.reject(new Error(`${p.method}: the browser closed its pipe`));
        pending.clear();
    });
    return {
        send(method, params = {}, sessionId = undefined, ms = STEP_TIMEOUT_MS) {
            const id = nextId++;
            const msg = { id, method, params };
            if (sessionId) msg.sessionId = sessionId;
            const answer = new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
            toBrowser.write(JSON.stringify(msg) + '\0');
            return withTimeout(answer, ms, `DevTools ${method}`);
        },
        on(method, sessionId, fn) {
            listeners.push({ method, sessionId, fn });
        }
    };
}
