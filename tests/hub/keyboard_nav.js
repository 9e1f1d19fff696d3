// Keyboard navigation of one hub page in headless Chromium, over the DevTools protocol on
// a pipe (--remote-debugging-pipe: no port, no npm package): Tab through the page and
// record every element that takes the focus, check the focus is visible, then Enter on a
// link and see where it went. Prints one JSON object.
//   node keyboard_nav.js CHROMIUM URL [LINK_HREF]
'use strict';
const { spawn } = require('child_process');
const os = require('os');
const fs = require('fs');
const path = require('path');

const [chromium, url, follow] = process.argv.slice(2);
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ep-kbd-'));
const child = spawn(chromium, ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--user-data-dir=' + profile, '--remote-debugging-pipe', 'about:blank'],
  { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
const toBrowser = child.stdio[3], fromBrowser = child.stdio[4];
let nextId = 1, buffer = '';
const pending = new Map(), waiters = [];
fromBrowser.on('data', (chunk) => {
  buffer += chunk.toString('utf8');
  let end;
  while ((end = buffer.indexOf('\0')) >= 0) {
    const msg = JSON.parse(buffer.slice(0, end));
    buffer = buffer.slice(end + 1);
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      msg.error ? reject(new Error(JSON.stringify(msg.error))) : resolve(msg.result);
    } else if (msg.method) {
      for (const w of waiters.slice()) if (w.method === msg.method) { waiters.splice(waiters.indexOf(w), 1); w.resolve(msg.params); }
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  const msg = { id, method, params };
  if (sessionId) msg.sessionId = sessionId;
  toBrowser.write(JSON.stringify(msg) + '\0');
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
function event(method) { return new Promise((resolve) => waiters.push({ method, resolve })); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  const evaluate = async (expression) =>
    (await send('Runtime.evaluate', { expression, returnByValue: true }, sessionId)).result.value;
  const loaded = async () => {
    for (let i = 0; i < 200; ++i) {
      if ((await evaluate('document.readyState')) === 'complete') return;
      await sleep(50);
    }
    throw new Error('the page did not load');
  };
  const key = async (k, code, vk) => {
    for (const type of ['keyDown', 'keyUp'])
      await send('Input.dispatchKeyEvent', { type, key: k, code, windowsVirtualKeyCode: vk, nativeVirtualKeyCode: vk }, sessionId);
  };
  await send('Page.enable', {}, sessionId);
  await send('Page.navigate', { url }, sessionId);
  await loaded();
  // Every visible link and control, each given an index to know it by.
  const interactive = await evaluate(`(() => {
    const all = Array.from(document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea'))
      .filter((e) => e.getClientRects().length > 0);
    all.forEach((e, i) => e.setAttribute('data-kbd', String(i)));
    return all.map((e) => e.tagName.toLowerCase() + ' ' + (e.getAttribute('href') || e.name || e.textContent.trim()).slice(0, 80));
  })()`);
  const reached = new Set();
  let unstyled = [];
  for (let i = 0; i < interactive.length + 3; ++i) {
    await key('Tab', 'Tab', 9);
    const at = await evaluate(`(() => {
      const e = document.activeElement;
      if (!e || !e.hasAttribute('data-kbd')) return null;
      const s = getComputedStyle(e);
      return { index: Number(e.getAttribute('data-kbd')), visible: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0 };
    })()`);
    if (at === null) continue;
    reached.add(at.index);
    if (!at.visible) unstyled.push(interactive[at.index]);
  }
  const result = {
    interactive: interactive.length,
    reached: reached.size,
    unreached: interactive.filter((_, i) => !reached.has(i)),
    focus_not_visible: [...new Set(unstyled)],
  };
  if (follow) {
    // Tab to the link with this href, Enter, and say where the browser went.
    await send('Page.navigate', { url }, sessionId);
    await loaded();
    for (let i = 0; i < interactive.length + 3; ++i) {
      await key('Tab', 'Tab', 9);
      if ((await evaluate('document.activeElement && document.activeElement.getAttribute("href")')) === follow) break;
    }
    const navigated = event('Page.frameNavigated');
    await key('Enter', 'Enter', 13);
    await Promise.race([navigated, sleep(5000)]);
    await loaded();
    result.after_enter = await evaluate('location.pathname + location.search');
  }
  return result;
}

// Chromium ended (and its profile no longer written to) before the profile is removed.
function finish(output, code) {
  console.log(JSON.stringify(output));
  child.once('exit', () => {
    try { fs.rmSync(profile, { recursive: true, force: true }); } catch (e) { /* a temporary directory */ }
    process.exit(code);
  });
  child.kill('SIGKILL');
}
const timer = setTimeout(() => finish({ error: 'timed out' }, 1), 60000);
main().then((r) => { clearTimeout(timer); finish(r, 0); }, (e) => { clearTimeout(timer); finish({ error: String(e) }, 1); });
