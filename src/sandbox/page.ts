// The sandbox page: chat with the bot, arm a fault for the next reply, and follow the conversation's
// workflows into the Temporal Web UI. Plain HTML and a little script; no build step.
export interface SandboxPageOptions {
  temporalUiUrl?: string;
  namespace: string;
}

const escapeAttr = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function sandboxPage(options: SandboxPageOptions): string {
  const ui = options.temporalUiUrl
    ? escapeAttr(`${options.temporalUiUrl}/namespaces/${options.namespace}/workflows`)
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>replyflow sandbox</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
 body{font:15px system-ui,sans-serif;max-width:760px;margin:2em auto;padding:0 1em;color:#222}
 #log{border:1px solid #ccc;border-radius:8px;padding:1em;min-height:240px;background:#fafafa}
 .msg{margin:.4em 0;padding:.5em .8em;border-radius:10px;max-width:80%}
 .user{background:#d8ecff;margin-left:auto;text-align:right}.bot{background:#fff;border:1px solid #ddd}
 form{display:flex;gap:.5em;margin-top:1em}#text{flex:1;padding:.5em}
 .controls{display:flex;gap:1em;flex-wrap:wrap;margin:1em 0;align-items:center}
 .status{color:#555;font-size:13px}
</style></head>
<body>
<h1>replyflow sandbox</h1>
<p>Chat with the bot. Each message is a signed webhook to <code>/webhooks/sandbox</code>; the reply goes
through the event workflow and the sandbox target. Arm a fault to see retries, unknown outcomes and held work.</p>
<div class="controls">
 <label>Conversation <code id="conv"></code></label>
 <label>Target
  <select id="mode" name="mode">
   <option value="sandbox">sandbox (idempotency key + lookup)</option>
   <option value="sandbox-lookup">sandbox-lookup (lookup only)</option>
   <option value="sandbox-blind">sandbox-blind (neither: unknown → held)</option>
  </select></label>
 <label>Next reply
  <select id="fault" name="fault">
   <option value="">works</option>
   <option value="drop-after-commit">drop the response after committing</option>
   <option value="error-500">500</option>
   <option value="unavailable-503">503 (not applied)</option>
   <option value="rate-limit-429">429 with Retry-After</option>
   <option value="slow">slow (past the timeout)</option>
  </select></label>
 ${ui ? `<a id="ui-link" target="_blank" rel="noopener" href="${ui}">Open in Temporal UI</a>` : ''}
</div>
<div id="log" aria-live="polite"></div>
<form id="send"><input id="text" name="text" autocomplete="off" placeholder="Ask something, e.g. opening hours" required>
<button type="submit">Send</button></form>
<p class="status" id="status"></p>
<script>
const conv = localStorage.getItem('replyflow.conversation') || ('c' + Math.random().toString(36).slice(2, 10));
localStorage.setItem('replyflow.conversation', conv);
document.getElementById('conv').textContent = conv;
const link = document.getElementById('ui-link');
if (link) link.href += '?query=' + encodeURIComponent('ConversationId="' + conv + '"');
const statusEl = document.getElementById('status');
async function refresh() {
  const r = await fetch('/sandbox/api/conversations/' + conv + '/messages');
  if (!r.ok) return;
  const { messages, armedFault } = await r.json();
  const log = document.getElementById('log');
  log.replaceChildren(...messages.map((m) => {
    const div = document.createElement('div');
    div.className = 'msg ' + m.author;
    div.dataset.author = m.author;
    div.textContent = m.text;
    return div;
  }));
  document.getElementById('fault').value = armedFault || '';
}
document.getElementById('fault').addEventListener('change', async (e) => {
  await fetch('/sandbox/api/faults', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ conversationId: conv, fault: e.target.value || null }) });
});
document.getElementById('send').addEventListener('submit', async (e) => {
  e.preventDefault();
  const input = document.getElementById('text');
  const r = await fetch('/sandbox/messages', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ conversationId: conv, text: input.value, mode: document.getElementById('mode').value }) });
  const body = await r.json().catch(() => ({}));
  statusEl.textContent = r.ok ? 'accepted as ' + (body.receiver && body.receiver.workflowId) : 'not accepted: ' + (body.error || r.status);
  input.value = '';
  refresh();
});
refresh();
setInterval(refresh, 1000);
</script>
</body></html>`;
}
