-- The sandbox shows rich messages: a bot reply's Slack fields (blocks, …) and LINE message object
-- (quick reply chips), and for each of the page's own messages which sandbox event it sent (a typed
-- message, a slash command, a button click, a postback), so the chat reads as it happened.
ALTER TABLE sandbox_messages
  ADD COLUMN slack      jsonb,               -- bot replies: Slack's fields of the message (blocks, response_type, …)
  ADD COLUMN line       jsonb,               -- bot replies: one LINE message object (quickReply, …)
  ADD COLUMN event_type text NOT NULL DEFAULT 'message';
