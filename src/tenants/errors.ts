// The errors of tenants (the tenants file, Slack installations and the secrets sealed for them).

/** Thrown when a callback's `state` is not one this replyflow issued in the last ten minutes. */
export class InstallStateError extends Error {
  override name = 'InstallStateError';
}

/**
 * Thrown when `oauth.v2.access` did not give what was asked. `code` is Slack's error code
 * (`invalid_code`, `bad_client_secret`, `invalid_refresh_token`…) when Slack answered; `reached` says
 * whether it did (false: unreachable, timed out, or not Slack's API at SLACK_API_URL).
 */
export class SlackOAuthError extends Error {
  override name = 'SlackOAuthError';
  constructor(
    message: string,
    readonly reached: boolean,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** Thrown when a stored secret cannot be opened: a key id this process lacks, or a ciphertext that is not this row's. */
export class TenantSecretError extends Error {
  override name = 'TenantSecretError';
}

/** Thrown when TENANTS_FILE cannot be used; lists every problem, each with the entry's path, never a secret. */
export class TenantsFileError extends Error {
  override name = 'TenantsFileError';
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`invalid tenants file ${file} (TENANTS_FILE): ${problems.join('; ')}`);
  }
}
