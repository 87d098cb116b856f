// Alerts for held, failed and reminded work: to the log always, and as JSON to a webhook when one is
// configured. They carry identifiers, the recommended action and a link; never message text.
import type { Alert } from '../activities/deps';
import type { Logger } from './logger';

interface NotifierOptions {
  logger: Logger;
  webhookUrl?: string;
  temporalUiUrl?: string;
  namespace: string;
}

export function workflowUrl(uiUrl: string, namespace: string, workflowId: string): string {
  return `${uiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

export function createNotifier(options: NotifierOptions): (alert: Alert) => Promise<void> {
  return async (alert) => {
    const link = options.temporalUiUrl
      ? workflowUrl(options.temporalUiUrl, options.namespace, alert.workflowId)
      : undefined;
    options.logger.warn({ alert: { ...alert, link } }, `replyflow ${alert.kind}: ${alert.workflowId}`);
    if (!options.webhookUrl) return;
    const headline = `replyflow ${alert.kind === 'reminder' ? `reminder #${alert.level}` : alert.kind}: ${alert.businessKey}`;
    const response = await fetch(options.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        text: [headline, alert.recommendedAction && `Recommended: ${alert.recommendedAction}`, link]
          .filter(Boolean)
          .join('\n'),
        ...alert,
        link,
      }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`alert webhook answered ${response.status}`);
  };
}
