// Every workflow the worker registers.
export { conversationTurns } from './conversation';
export { handleEvent } from './handle-event';
export { tenantRevoked } from './tenant-revoked';
