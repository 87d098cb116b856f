// What the activities need from the outside world, injected once by the worker (or a test).
import type { EffectsRepository } from '../src/db/effects';
import type { OperatorStore } from '../src/db/operators';
import type { Pool } from '../src/db/pool';
import type { SendPacing } from '../src/db/send-pacing';
import type { Logger } from '../src/logger';
import type { AlertKind, DeliveryPolicy } from '../src/model';
import type { Responder } from '../src/responders/types';
import type { Planner, SlackReplySettings } from '../src/routes';
import type { TargetRegistry } from '../src/targets';
import type { WorkerMetrics } from '../src/worker-metrics';

export interface Alert {
  kind: AlertKind;
  workflowId: string;
  businessKey: string;
  step?: string;
  recommendedAction?: string;
  errorClass?: string;
  /** 0 for the first alert, then one more per reminder (escalation). */
  level: number;
}

export interface ActivityDeps {
  pool: Pool;
  /** The one owner of effect rows' status (tests wrap it to stall or fail a named step). */
  effects: EffectsRepository;
  targets: TargetRegistry;
  responder: Responder;
  policy: DeliveryPolicy;
  /** Routes: which effects an event asks for. */
  plan: Planner;
  /** Which Slack messages the default route answers beyond those addressed to the bot. */
  slackReplies: SlackReplySettings;
  /** Delivers an alert (log, webhook); never given message text. */
  notify: (alert: Alert) => Promise<void>;
  logger: Logger;
  /** Outcomes, times to resolution and retries for the worker's Prometheus endpoint. */
  metrics: WorkerMetrics;
  /** Slots of paced destinations (a Slack channel: a message a second), shared by every worker. */
  pacing: SendPacing;
  /** Operator accounts, for checking who is behind a decision. */
  operators: OperatorStore;
  /** The payload keys by id: a decision's seal is checked with the seal key derived from one of them. */
  payloadKeys: Record<string, Buffer>;
}
