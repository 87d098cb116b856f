// The sandbox page: chat with the bot, arm a fault for the next reply, watch where each reply stands
// (held included), follow it into the Temporal Web UI, and hand the chat to a person or close it.
// Plain HTML and a little script; no build step.
export interface SandboxPageOptions {
  temporalUiUrl?: string;
  namespace: string;
}

const escapeAttr = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function sandboxPage(options: SandboxPageOptions): string {
  const workflows = options.temporalUiUrl
    ? `${options.temporalUiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(options.namespace)}/workflows`
    : '';
  const ui = escapeAttr(workflows);
  // Inside <script>, a "</script>" in a configured URL must not end the element.
  const uiForScript = JSON.stringify(workflows).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>replyflow sandbox</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
 body{font:15px system-ui,sans-serif;max-width:820px;margin:2em auto;padding:0 1em;color:#222}
 #log{border:1px solid #ccc;border-radius:8px;padding:1em;min-height:240px;background:#fafafa}
 .msg{margin:.5em 0;padding:.5em .8em;border-radius:10px;max-width:80%;width:fit-content}
 .user{background:#d8ecff;margin-left:auto;text-align:right}.bot{background:#fff;border:1px solid #ddd}
 .meta{display:block;font-size:12px;color:#555;margin-top:.3em}
 .state{font-weight:600}.state-held,.state-failed{color:#b3261e}.state-replied{color:#1b6e2a}
 form{display:flex;gap:.5em;margin-top:1em}#text{flex:1;padding:.5em}
 .controls{display:flex;gap:1em;flex-wrap:wrap;margin:1em 0;align-items:center}
 .status{color:#555;font-size:13px}
</style></head>
<body>
<h1>replyflow sandbox</h1>
<p>Chat with the bot. Each message is a signed webhook to <code>/webhooks/sandbox</code>; the reply goes
through the event workflow and the sandbox target. Arm a fault to see retries, unknown outcomes and held
work: with the <b>sandbox-blind</b> target and <b>drop the response after committing</b>, the reply arrives
but replyflow cannot know it did, so the item is <b>held</b> until an operator decides in the Temporal UI
(docs/runbook.md).</p>
<div class="controls">
 <label>Conversation <code id="conv"></code></label>
 <span>state: <b id="conversation-state" data-state=""></b></span>
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
</div>
<div class="controls">
 <button type="button" id="handoff">Ask for a person</button>
 <button type="button" id="close">End conversation</button>
 <button type="button" id="new">New conversation</button>
 ${
   ui
     ? `<a id="ui-link" target="_blank" rel="noopener" href="${ui}">This conversation in the Temporal UI</a>
 <a id="held-link" target="_blank" rel="noopener" href="${ui}?query=${encodeURIComponent('ReplyState="held"')}">All held work</a>`
     : ''
 }
</div>
<div id="log" aria-live="polite"></div>
<form id="send"><input id="text" name="text" autocomplete="off" placeholder="Ask something, e.g. opening hours" required>
<button type="submit">Send</button></form>
<p class="status" id="status" role="status"></p>
<script>
const UI = ${uiForScript};
const STATE_WORDS = { unhandled: 'new', bot_handling: 'with the bot', human_handling: 'with a person', closed: 'closed' };
const REPLY_WORDS = {
  received: 'received, waiting for the worker',
  sending: 'sending the reply…',
  checking: 'outcome unknown: checking with the target…',
  held: 'held: an operator decides (open it in the Temporal UI)',
  replied: 'replied',
  failed: 'failed: an operator reprocesses or discards it',
  discarded: 'discarded by an operator',
  'not answered': 'not answered',
};
let conv = localStorage.getItem('replyflow.conversation');
if (!conv) newConversation();
function newConversation() {
  // Unguessable: conversation ids are the only names the page's API knows a chat by.
  conv = 'c' + Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, '0')).join('');
  localStorage.setItem('replyflow.conversation', conv);
}
const statusEl = document.getElementById('status');
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
function replyLine(reply) {
  const meta = el('span', 'meta');
  meta.append('reply: ');
  const state = el('span', 'state state-' + reply.state.replace(' ', '-'), REPLY_WORDS[reply.state] || reply.state);
  state.dataset.replyState = reply.state;
  meta.append(state);
  if (reply.decision) meta.append(' (' + reply.decision + ' by an operator)');
  if (reply.reason) meta.append(' (' + reply.reason + ')');
  if (UI) {
    const link = el('a', 'workflow-link', 'workflow');
    link.href = UI + '/' + encodeURIComponent(reply.workflowId);
    link.target = '_blank';
    link.rel = 'noopener';
    meta.append(' · ', link);
  }
  return meta;
}
async function refresh() {
  document.getElementById('conv').textContent = conv;
  const uiLink = document.getElementById('ui-link');
  if (uiLink) uiLink.href = UI + '?query=' + encodeURIComponent('ConversationId="' + conv + '"');
  const r = await fetch('/sandbox/api/conversations/' + conv + '/messages');
  if (!r.ok) return;
  const { messages, armedFault, conversationState } = await r.json();
  const log = document.getElementById('log');
  log.replaceChildren(...messages.map((m) => {
    const div = el('div', 'msg ' + m.author);
    div.dataset.author = m.author;
    div.dataset.messageId = m.id;
    div.append(el('span', 'text', m.text));
    if (m.reply) div.append(replyLine(m.reply));
    else if (m.author === 'bot') div.append(el('span', 'meta', 'message id ' + m.id));
    return div;
  }));
  const state = document.getElementById('conversation-state');
  state.textContent = STATE_WORDS[conversationState] || conversationState;
  state.dataset.state = conversationState;
  const fault = document.getElementById('fault');
  if (document.activeElement !== fault) fault.value = armedFault || '';
}
async function post(path, body) {
  const r = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { ok: r.ok, status: r.status, body: await r.json().catch(() => ({})) };
}
document.getElementById('fault').addEventListener('change', async (e) => {
  await post('/sandbox/api/faults', { conversationId: conv, fault: e.target.value || null });
  statusEl.textContent = e.target.value ? 'the next reply will fail: ' + e.target.value : 'the next reply works';
});
for (const type of ['handoff', 'close']) {
  document.getElementById(type).addEventListener('click', async () => {
    const r = await post('/sandbox/conversation-events', { conversationId: conv, type });
    statusEl.textContent = r.ok ? type + ' accepted as ' + (r.body.receiver && r.body.receiver.workflowId) : 'not accepted: ' + (r.body.error || r.status);
    refresh();
  });
}
document.getElementById('new').addEventListener('click', () => {
  newConversation();
  statusEl.textContent = 'new conversation ' + conv;
  refresh();
});
document.getElementById('send').addEventListener('submit', async (e) => {
  e.preventDefault();
  const input = document.getElementById('text');
  const r = await post('/sandbox/messages', { conversationId: conv, text: input.value, mode: document.getElementById('mode').value });
  statusEl.textContent = r.ok ? 'accepted as ' + (r.body.receiver && r.body.receiver.workflowId) : 'not accepted: ' + (r.body.error || r.status);
  input.value = '';
  refresh();
});
refresh();
setInterval(refresh, 1000);
</script>
</body></html>`;
}
