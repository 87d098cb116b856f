// The errors of `replyflow cluster` (installing and starting a Temporal cluster on this machine).

/** Thrown when the server cannot be built; the message has the command, its error and what to do. */
export class TemporalServerInstallError extends Error {
  override name = 'TemporalServerInstallError';
}

/** Thrown when a node does not come up; the message ends with the tail of its log. */
export class ClusterStartError extends Error {
  override name = 'ClusterStartError';
  constructor(
    message: string,
    /** The node exited because a port it was given was taken before it could bind it. */
    readonly portTaken = false,
  ) {
    super(message);
  }
}
