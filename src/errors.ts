// One way to turn an error into a log line or a message: its own message followed by its causes'.
// Temporal's client wraps the server's answer ("Failed to start Workflow") around the reason (a gRPC
// error naming, say, the search attribute a namespace lacks); dropping the cause drops the reason.

/** `err`'s message and those of its causes (at most five deep), joined by ": ". */
export function errorMessage(err: unknown): string {
  const messages: string[] = [];
  for (let e = err; e instanceof Error && messages.length < 5; e = e.cause) messages.push(e.message);
  return messages.join(': ') || String(err);
}
