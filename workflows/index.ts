// Every workflow the worker registers.
export { handleEvent } from './handle-event';
