/*
 * The send protocol with the lease check before the request write removed (send.ts leaseLeft()): a
 * stalled attempt that wakes after its lease expired writes anyway. spin must find the double reply
 * here; if it does not, the model cannot tell the lease from its absence.
 */
#define NO_LEASE
#include "send.pml"
