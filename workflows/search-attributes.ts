// The custom search attributes operators filter on in the Temporal Web UI. Registered by the launcher
// and docker-compose. Never put message text or secrets in them: codecs do not encrypt them.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const ReplyState = defineSearchAttributeKey('ReplyState', SearchAttributeType.KEYWORD);
export const Provider = defineSearchAttributeKey('Provider', SearchAttributeType.KEYWORD);
export const Integration = defineSearchAttributeKey('Integration', SearchAttributeType.KEYWORD);
export const BusinessKey = defineSearchAttributeKey('BusinessKey', SearchAttributeType.KEYWORD);
export const ConversationId = defineSearchAttributeKey('ConversationId', SearchAttributeType.KEYWORD);
export const FailedStep = defineSearchAttributeKey('FailedStep', SearchAttributeType.KEYWORD);
export const LastErrorClass = defineSearchAttributeKey('LastErrorClass', SearchAttributeType.KEYWORD);
export const RecommendedAction = defineSearchAttributeKey('RecommendedAction', SearchAttributeType.KEYWORD);
export const CorrelationId = defineSearchAttributeKey('CorrelationId', SearchAttributeType.KEYWORD);
/** The account the event came through (src/tenants/tenant-id.ts): set by the receiver at start, ids only. */
export const Tenant = defineSearchAttributeKey('Tenant', SearchAttributeType.KEYWORD);
export const Attempts = defineSearchAttributeKey('Attempts', SearchAttributeType.INT);

export const ALL_SEARCH_ATTRIBUTES = [
  ReplyState,
  Provider,
  Integration,
  BusinessKey,
  ConversationId,
  FailedStep,
  LastErrorClass,
  RecommendedAction,
  CorrelationId,
  Tenant,
  Attempts,
];
