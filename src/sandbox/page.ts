// The sandbox page: chat with the bot, arm a fault for the next reply, watch where each reply stands
// (held included), follow it into the Temporal Web UI, and hand the chat to a person or close it.
// It plays Slack (blocks with buttons, slash commands) or LINE (quick reply chips, postbacks), so a
// bot can be tried in both shapes without an account. Plain HTML and a little script; no build step.
// Everything a bot sent is shown through textContent and attributes set one by one, never as markup.
interface SandboxPageOptions {
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
  // Raw: the page's script keeps its backslashes (regular expressions) as written.
  return String.raw`<!doctype html>
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
 .user.action .text::before{content:"\25B8  "}.user.action .text{font-style:italic}
 .user.slash_command .text{font-family:ui-monospace,monospace}
 .blk{margin:.3em 0}.blk-header{font-weight:700;font-size:17px}.blk-context{font-size:12px;color:#555}
 .blk-fields{display:grid;grid-template-columns:1fr 1fr;gap:.2em 1em}
 .blk-actions{display:flex;gap:.4em;flex-wrap:wrap}.blk-divider{border:0;border-top:1px solid #ddd}
 .blk-button{padding:.3em .8em;border:1px solid #bbb;border-radius:4px;background:#fff;cursor:pointer}
 .blk-button.primary{background:#007a5a;color:#fff;border-color:#007a5a}
 .blk-button.danger{background:#e01e5a;color:#fff;border-color:#e01e5a}
 .blk-unknown{color:#777;font-size:12px}
 .chips{display:flex;gap:.4em;flex-wrap:wrap;margin-top:.4em}
 .chip{padding:.3em .9em;border:1px solid #06c755;border-radius:999px;background:#fff;color:#06c755;cursor:pointer}
 .chip:disabled{border-color:#bbb;color:#999;cursor:default}
</style></head>
<body>
<h1>replyflow sandbox</h1>
<p>Chat with the bot. Each message is a signed webhook to <code>/webhooks/sandbox</code>; the reply goes
through the event workflow and the sandbox target. <b>Slack-style</b>, the bot may answer with blocks
(click their buttons) and <code>/command args</code> is a slash command; <b>LINE-style</b>, it may answer
with quick reply chips (tap one). Arm a fault to see retries, unknown outcomes and held
work: with the <b>sandbox-blind</b> target and <b>drop the response after committing</b>, the reply arrives
but replyflow cannot know it did, so the item is <b>held</b> until an operator decides in the Temporal UI
(docs/runbook.md).</p>
<div class="controls">
 <label>Conversation <code id="conv"></code></label>
 <span>state: <b id="conversation-state" data-state=""></b></span>
 <label>Shape
  <select id="style" name="style">
   <option value="slack">Slack-style</option>
   <option value="line">LINE-style</option>
  </select></label>
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
const PLACEHOLDERS = {
  slack: 'Ask something, e.g. opening hours, or a command: /weather tokyo',
  line: 'Ask something, e.g. opening hours',
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
/** Slack's text object (or a plain string) as text; anything else says nothing. */
function textOf(t) {
  if (typeof t === 'string') return t;
  return t && typeof t.text === 'string' ? t.text : '';
}
/** Slack mrkdwn, minimally: *bold*, code spans and <@user> mentions, as text nodes (never markup). */
function mrkdwn(text) {
  const span = el('span', 'mrkdwn');
  const plain = String(text).replace(/<@([\w.-]+)(?:\|[^>]*)?>/g, '@$1');
  for (const part of plain.split(/(\*[^*\n]+\*|\x60[^\x60\n]+\x60)/)) {
    if (/^\*[^*\n]+\*$/.test(part)) span.append(el('b', '', part.slice(1, -1)));
    else if (/^\x60[^\x60\n]+\x60$/.test(part)) span.append(el('code', '', part.slice(1, -1)));
    else if (part) span.append(part);
  }
  return span;
}
function unknown(what) {
  return el('span', 'blk-unknown', '(' + what + ': not shown in the sandbox)');
}
/** A Slack button: a click is a block_actions event with the button's action id, block id and value. */
function slackButton(element, block) {
  const label = textOf(element.text) || 'button';
  const button = el('button', 'blk-button', label);
  button.type = 'button';
  if (element.style === 'primary' || element.style === 'danger') button.classList.add(element.style);
  const action = { actionId: String(element.action_id || 'button') };
  if (typeof block.block_id === 'string') action.blockId = block.block_id;
  if (typeof element.value === 'string') action.value = element.value;
  button.dataset.actionId = action.actionId;
  button.addEventListener('click', () =>
    sendEvent('/sandbox/actions', { type: 'block_actions', label, action }),
  );
  return button;
}
function slackElement(element, block) {
  if (element && element.type === 'button') return slackButton(element, block);
  if (element && element.type === 'image') return el('span', 'blk-image', '[image: ' + textOf(element.alt_text) + ']');
  if (element && (element.type === 'mrkdwn' || element.type === 'plain_text')) return mrkdwn(textOf(element));
  return unknown('a ' + String(element && element.type) + ' element');
}
/** Slack blocks, minimally: header, section (text, fields, a button), context, divider, actions, image. */
function slackBlock(block) {
  const div = el('div', 'blk blk-' + String(block.type).replace(/[^a-z_]/g, ''));
  div.dataset.blockType = String(block.type);
  switch (block.type) {
    case 'header':
      div.append(textOf(block.text));
      break;
    case 'section': {
      if (block.text) div.append(mrkdwn(textOf(block.text)));
      if (Array.isArray(block.fields)) {
        const fields = el('div', 'blk-fields');
        for (const f of block.fields) fields.append(mrkdwn(textOf(f)));
        div.append(fields);
      }
      if (block.accessory) div.append(' ', slackElement(block.accessory, block));
      break;
    }
    case 'context':
      for (const e of Array.isArray(block.elements) ? block.elements : []) div.append(slackElement(e, block), ' ');
      break;
    case 'divider':
      return el('hr', 'blk blk-divider');
    case 'actions':
      div.classList.add('blk-actions');
      for (const e of Array.isArray(block.elements) ? block.elements : []) div.append(slackElement(e, block));
      break;
    case 'image':
      div.append('[image: ' + textOf(block.alt_text) + ']');
      break;
    default:
      div.append(unknown('a ' + String(block.type) + ' block'));
  }
  return div;
}
/** A LINE quick reply chip: a message action sends its text, a postback action a postback event. */
function lineChip(item) {
  const action = (item && item.action) || {};
  const chip = el('button', 'chip', String(action.label || action.text || action.type));
  chip.type = 'button';
  chip.dataset.actionType = String(action.type);
  if (action.type === 'message' && typeof action.text === 'string') {
    chip.addEventListener('click', () =>
      sendEvent('/sandbox/messages', { text: action.text, style: 'line' }),
    );
  } else if (action.type === 'postback' && typeof action.data === 'string') {
    const label = String(action.displayText || action.label || action.data);
    chip.addEventListener('click', () =>
      sendEvent('/sandbox/actions', { type: 'postback', label, postback: { data: action.data } }),
    );
  } else {
    chip.disabled = true;
    chip.title = 'a ' + String(action.type) + ' action: not in the sandbox';
  }
  return chip;
}
function lineMessage(message, withChips) {
  const div = el('div', 'line-message');
  div.dataset.lineType = String(message.type);
  if (message.type === 'text' || message.type === 'textV2') div.append(el('span', 'text', String(message.text || '')));
  else div.append(el('span', 'text', String(message.altText || '')), ' ', unknown('a ' + String(message.type) + ' message'));
  const items = message.quickReply && Array.isArray(message.quickReply.items) ? message.quickReply.items : [];
  // As in LINE, the chips stay only until the person says something else.
  if (withChips && items.length) {
    const chips = el('div', 'chips');
    for (const item of items) chips.append(lineChip(item));
    div.append(chips);
  }
  return div;
}
function botContent(m, isLast) {
  if (Array.isArray(m.line)) return m.line.map((message) => lineMessage(message || {}, isLast));
  const blocks = m.slack && Array.isArray(m.slack.blocks) ? m.slack.blocks : [];
  if (blocks.length) return blocks.map((b) => slackBlock(b || {}));
  return [el('span', 'text', m.text)];
}
function messageRow(m, isLast) {
  const div = el('div', 'msg ' + m.author);
  div.dataset.author = m.author;
  div.dataset.messageId = m.id;
  if (m.author === 'user') {
    div.dataset.eventType = m.eventType;
    if (m.eventType === 'block_actions' || m.eventType === 'postback') div.classList.add('action');
    if (m.eventType === 'slash_command') div.classList.add('slash_command');
    div.append(el('span', 'text', m.text));
  } else {
    div.append(...botContent(m, isLast));
  }
  if (m.reply) div.append(replyLine(m.reply));
  else if (m.author === 'bot') div.append(el('span', 'meta', 'message id ' + m.id));
  return div;
}
let shown = '';
async function refresh() {
  document.getElementById('conv').textContent = conv;
  const uiLink = document.getElementById('ui-link');
  if (uiLink) uiLink.href = UI + '?query=' + encodeURIComponent('ConversationId="' + conv + '"');
  const r = await fetch('/sandbox/api/conversations/' + conv + '/messages');
  if (!r.ok) return;
  const seen = await r.text();
  const { messages, armedFault, conversationState } = JSON.parse(seen);
  const fault = document.getElementById('fault');
  if (document.activeElement !== fault) fault.value = armedFault || '';
  // Drawn again only when something changed, so a button is not replaced under the pointer.
  if (seen === shown) return;
  shown = seen;
  const log = document.getElementById('log');
  log.replaceChildren(...messages.map((m, i) => messageRow(m, i === messages.length - 1)));
  const state = document.getElementById('conversation-state');
  state.textContent = STATE_WORDS[conversationState] || conversationState;
  state.dataset.state = conversationState;
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
/** Sends one of the person's events (a message, a click, a tap) in this conversation and target. */
async function sendEvent(path, body) {
  const r = await post(path, { ...body, conversationId: conv, mode: document.getElementById('mode').value });
  statusEl.textContent = r.ok ? 'accepted as ' + (r.body.receiver && r.body.receiver.workflowId) : 'not accepted: ' + (r.body.error || r.status);
  refresh();
}
const styleSelect = document.getElementById('style');
function useStyle(style) {
  styleSelect.value = style;
  localStorage.setItem('replyflow.style', style);
  document.getElementById('text').placeholder = PLACEHOLDERS[style];
}
useStyle(localStorage.getItem('replyflow.style') === 'line' ? 'line' : 'slack');
styleSelect.addEventListener('change', () => useStyle(styleSelect.value));
document.getElementById('send').addEventListener('submit', async (e) => {
  e.preventDefault();
  const input = document.getElementById('text');
  const text = input.value;
  input.value = '';
  await sendEvent('/sandbox/messages', { text, style: styleSelect.value });
});
refresh();
setInterval(refresh, 1000);
</script>
</body></html>`;
}
