/*
 * The send protocol of one effect (docs/architecture.md "The send protocol"),
 * for spin to check exhaustively: the person receives at most one reply, and every event ends in
 * succeeded, held, failed or discarded. Names mirror the code; each part says which function it models.
 * `npm run model` (scripts/model.sh) runs the checks; docs/architecture.md says what they prove.
 *
 * Not modelled, because it reads the row and writes nothing: before takeLease, a send attempt may wait
 * out the conversation's gather window and answer `wait` when an earlier send of its conversation is
 * pending; the workflow then runs the send activity again later, exactly as after a retry that found
 * the row `claimed`. An attempt that stalls there is an attempt that stalls before takeLease.
 *
 * Who retries an attempt does not change the protocol: the send is a local activity since the
 * `local-sends` patch, and the worker's SDK times its attempts out and retries them as the server does an
 * activity's (a late result dropped). A worker that dies mid-attempt is an attempt stalled for ever; the
 * worker that takes the workflow task over runs a new attempt beside it, as startAttempt() does.
 *
 * Operators may also reset the workflow (`temporal workflow reset`): the run starts again from the
 * moment a resend awaited approval, with that moment's state, and the approval counts again (Temporal
 * re-delivers it into the new run). The workflow's own count of resends then starts over; what keeps
 * one approval to one resend is the row: a decision answers one hold (the lease attempt the row had
 * when the workflow started waiting), and prepareResend moves the row back only if no attempt took a
 * lease since that hold (activities/effects.ts `holdAttempts`).
 *
 * Variants that must fail, so that the check can fail: NO_LEASE (send-no-lease.pml) drops the lease
 * check before the write; UNCHECKED_REPROCESS is the effects code before the fix that the model found, where
 * a spent retry budget recorded `failed` over a `sending` row and prepareResend moved a row back to
 * retry_wait without an exact lookup or a check that no attempt took a lease since it read the row;
 * UNBOUND_DECISIONS is the decision before it was bound to its hold, when a reset spent one approval twice.
 */

/* Time is discrete ticks. The bounds keep the search exhaustive and quick; the -D flags raise them. */
#ifndef START_TO_CLOSE
#define START_TO_CLOSE 2       /* the send activity's start-to-close timeout (policy.sendTimeoutMs) */
#endif
#define LEASE_MARGIN 1         /* LEASE_MARGIN_MS: the lease ends this long before Temporal's timeout */
#define WRITE_MARGIN 1         /* WRITE_MARGIN_MS: the lease must have this long left at the write */
#define RETRY_DELAY 1          /* Temporal's initialInterval; retryDelayMs() of a first retry */
#ifndef CONSISTENCY_DELAY
#define CONSISTENCY_DELAY 1    /* capabilities.consistencyDelayMs: how long a reply may hide from lookup */
#endif
#ifndef MAX_ATTEMPTS
#define MAX_ATTEMPTS 2         /* retry.maximumAttempts of the send activity: its retry budget */
#endif
#ifndef MAX_RESENDS
#define MAX_RESENDS 1          /* approved resends plus reprocesses that reach the target again */
#endif
#ifndef MAX_RESETS
#define MAX_RESETS 0           /* `temporal workflow reset`s to a moment a resend awaited approval */
#endif

/* EffectStatus (effects.status) and ReplyState (the workflow's state) share some names. */
mtype = { claimed, sending, retry_wait, unknown, held, succeeded, failed, discarded,
          received, processing, awaiting_approval };
/* What one send attempt ends with: a SendOutcome, or an ApplicationFailure Temporal retries or not. */
mtype = { none, retry, not_sendable, activity_failed };
/* What the target answers (src/targets/sandbox.ts with http-errors.ts classifying it). */
mtype = { answer_ok, answer_lost, answer_429, answer_4xx };
/* ResendCheck of prepareResend. */
mtype = { ready, already_sent, wait, moved };

/* The effect row (src/db/migrations: effects). */
mtype status = claimed;
byte lease_attempt = 0;                 /* effects.lease_attempt: which attempt owns the lease */
short lease_left = -CONSISTENCY_DELAY;  /* effects.lease_expires_at - now() (what leaseLeft reads);
                                           > 0 live; stops counting once expired CONSISTENCY_DELAY ago */
/* The workflow's hold (status.hold): the row's lease attempt when it started waiting for a decision. */
byte hold = 0;

/* The target (TargetCapabilities, chosen once per run) and the person. */
bool idempotency_key;                   /* capabilities.idempotencyKey: dedupes on our effect id */
bool lookup_capability;                 /* capabilities.lookup */
byte delivered = 0;                     /* replies the person received */
byte invisible = 0;                     /* ticks the committed reply may still hide from lookup */

/* Temporal's side of the send activity: which attempt it listens to, and until when. */
byte launched = 0;                      /* attempts started over all send activities (their ids) */
byte current = 0;                       /* the attempt whose result Temporal accepts; 0: none */
byte start_to_close = 0;                /* ticks before Temporal times the current attempt out */
mtype attempt_result = none;            /* what the current attempt reported */
byte next_retry_delay = 0;              /* ApplicationFailure.nextRetryDelay of a retryable failure */
byte timer = 0;                         /* Temporal's retry backoff, or the workflow's sleep() */

/* The person never receives two replies. (That every event ends in succeeded, held, failed or
 * discarded is the assertion at the end of handleEvent together with spin's check for invalid end
 * states: no run can get stuck anywhere else.) */
ltl at_most_one_reply { [] (delivered <= 1) }

/* How long ago a lease expired matters only to prepareResend's exact lookup. */
#define SETTLED (lookup_capability -> -CONSISTENCY_DELAY : 0)

/* The clock: every tick brings each pending deadline one step closer. Any process may stall for any
 * number of ticks between two of its steps (a paused worker, a long GC); a crashed worker is a stall
 * that outlasts everything else. */
active proctype clock() {
end_clock:
  do
  :: atomic {
       (lease_left > SETTLED || start_to_close > 0 || timer > 0 || invisible > 0) ->
       if :: lease_left > SETTLED -> lease_left-- :: else -> skip fi;
       if :: start_to_close > 0 -> start_to_close-- :: else -> skip fi;
       if :: timer > 0 -> timer-- :: else -> skip fi;
       if :: invisible > 0 -> invisible-- :: else -> skip fi
     }
  od
}

/* The target's lookup by effect id: a committed reply may hide for up to CONSISTENCY_DELAY ticks. */
inline lookup(found) {
  atomic {
    if
    :: delivered > 0 -> found = true
    :: delivered > 0 && invisible > 0 -> found = false
    :: delivered == 0 -> found = false
    fi
  }
}

/* lookUpUnknown's lookup: one that keeps failing proves nothing either way, so it counts as not found. */
inline lookupOrFail(found) {
  if
  :: lookup(found)
  :: found = false
  fi
}

/* activities/effects.ts recordResult: src/db/effects.ts recordSuccess, hold, fail or discard, each a
 * conditional UPDATE from the statuses its row of EFFECT_STEPS allows. */
inline recordResult(to) {
  atomic {
    if
    :: to == succeeded && (status == claimed || status == sending || status == retry_wait ||
                           status == unknown || status == held || status == failed) ->
       status = succeeded
    :: to == held && (status == sending || status == unknown) ->
       status = held; lease_left = 0
#ifdef UNCHECKED_REPROCESS
    :: to == failed && (status == claimed || status == sending || status == retry_wait || status == failed) ->
       status = failed
    :: to == discarded && (status == held || status == failed || status == unknown) ->
       status = discarded
#else
    :: to == failed && (status == claimed || status == retry_wait || status == failed) ->
       status = failed
    :: to == discarded && (status == held || status == failed || status == unknown || status == sending) ->
       status = discarded
#endif
    :: else -> skip
    fi
  }
}

/* src/db/effects.ts settle(): updates the row only while this attempt still owns its lease. */
inline settle(to) {
  atomic {
    if
    :: status == sending && lease_attempt == token -> status = to; lease_left = 0
    :: else -> skip
    fi
  }
}

/* Temporal accepts a result only from the attempt it waits for, and only before its timeout; a
 * result that comes later is dropped (Temporal moved on). Part of the attempt's last step: a stall
 * before it is a stall before that step. */
inline report() {
  if
  :: me == current && start_to_close > 0 && attempt_result == none ->
     attempt_result = result; next_retry_delay = delay
  :: else -> skip
  fi
}

/* activities/send.ts send(): one attempt of the send activity, with id `me` (Temporal's attempt). Three
 * steps; the attempt may stall for any number of ticks before each of them. */
proctype send(byte me) {
  byte token = 0;
  mtype result = none;
  mtype answer = none;
  byte delay = 0;

  /* src/db/effects.ts takeLease(): one transaction, the row locked FOR UPDATE. */
  atomic {
    if
    :: status == succeeded -> result = succeeded
    :: status == sending && lease_left > 0 ->
       result = retry; delay = lease_left + LEASE_MARGIN        /* LeaseHeldError */
    :: status == sending && lease_left <= 0 && !idempotency_key ->
       status = unknown; result = unknown                       /* an earlier attempt may have sent */
    :: status == unknown && !idempotency_key -> result = unknown
    :: status == claimed || status == retry_wait ||
       ((status == sending && lease_left <= 0 || status == unknown) && idempotency_key) ->
       token = me; lease_attempt = token;                       /* attempts + 1: unique per lease */
       status = sending; lease_left = START_TO_CLOSE - LEASE_MARGIN
    :: status == held || status == failed || status == discarded ->
       result = not_sendable                                    /* EffectNotSendableError */
    fi;
    if :: result != none -> report(); goto done :: else -> skip fi
  }

  /* leaseLeft() and the request write, as one step (the model's assumption: see docs). The target
   * commits the request or not, and answers or loses the answer. */
  atomic {
    if
#ifndef NO_LEASE
    :: !(status == sending && lease_attempt == token && lease_left >= WRITE_MARGIN) ->
       result = retry; delay = RETRY_DELAY; report(); goto done /* LeaseExpiredError: not sending */
#endif
    :: else ->
       if
       :: delivered > 0 && idempotency_key ->                   /* the target replays our key */
          if :: answer = answer_ok :: answer = answer_lost fi
       :: else ->
          if
          :: delivered++;
             if :: lookup_capability -> invisible = CONSISTENCY_DELAY :: else -> skip fi;
             if :: answer = answer_ok :: answer = answer_lost fi
          :: answer = answer_lost                               /* dropped before it committed */
          :: answer = answer_429
          :: answer = answer_4xx
          fi
       fi
    fi
  }

  /* The answer: record what it proves (recordSuccess(), or settleFailure() with settle()). */
  atomic {
    if
    :: answer == answer_ok ->
       if
       :: status != succeeded && status != discarded -> status = succeeded; lease_left = 0
       :: else -> skip
       fi;
       result = succeeded; report()
    :: answer == answer_429 || (answer == answer_lost && idempotency_key) ->
       settle(retry_wait); result = retry; delay = RETRY_DELAY; report()   /* RetryableTargetError */
    :: answer == answer_4xx -> settle(failed); result = failed; report()
    :: answer == answer_lost && !idempotency_key -> settle(unknown); result = unknown; report()
    fi
  };
done:
  atomic { token = 0; result = none; answer = none; delay = 0; me = 0 }  /* a finished attempt is just finished */
}

/* Temporal starts an attempt of the send activity: a new process, while earlier ones may still run. */
inline startAttempt() {
  tries++; launched++; current = launched; start_to_close = START_TO_CLOSE;
  run send(launched)
}

/* Temporal running the send activity with its retry policy (sender() in workflows/activity-stubs.ts,
 * attemptSend() in workflows/effect-attempt.ts): take the current attempt's result or its start-to-close timeout, then retry after
 * the delay, or give up once the budget is spent (the activity fails). */
inline executeSend(outcome) {
  atomic { reply_state = processing; tries = 0; outcome = none; startAttempt() };
  do
  :: atomic {
       (attempt_result != none || start_to_close == 0) ->
       if
       :: attempt_result == succeeded || attempt_result == failed || attempt_result == unknown ->
          outcome = attempt_result
       :: attempt_result == not_sendable -> outcome = activity_failed
       :: attempt_result == retry && tries < MAX_ATTEMPTS -> timer = next_retry_delay
       :: attempt_result == none && tries < MAX_ATTEMPTS -> timer = RETRY_DELAY  /* timed out */
       :: else -> outcome = activity_failed                       /* the retry budget is spent */
       fi;
       current = 0; start_to_close = 0; attempt_result = none; next_retry_delay = 0;
       if :: outcome != none -> break :: else -> skip fi
     };
     atomic { (timer == 0) -> startAttempt() }
  od
}

/* moveToRetry's guard on the hold the decision answers (dropped in the UNBOUND_DECISIONS variant). */
#ifdef UNBOUND_DECISIONS
#define NO_LEASE_SINCE_HOLD true
#else
#define NO_LEASE_SINCE_HOLD (lease_attempt == hold)
#endif

/* activities/effects.ts prepareResend(): re-read the row, look the result up again, and move the row back to
 * retry_wait only with a conditional UPDATE. Three steps, as in the code. */
inline prepareResend(check) {
  atomic {
    check = none; read_lease_attempt = lease_attempt;
    if
    :: status == succeeded -> check = already_sent
#ifndef UNBOUND_DECISIONS
    :: status != succeeded && (lease_attempt != hold || status == discarded) ->
       check = moved                   /* an attempt since the hold this decision answers */
#endif
    :: status == sending && lease_left > 0 -> check = wait      /* an attempt holds the lease */
#ifndef UNCHECKED_REPROCESS
    :: (status == sending || status == unknown) && lease_left <= 0 &&
       !(lookup_capability && lease_left <= -CONSISTENCY_DELAY) ->
       check = wait                    /* an outcome nobody judged, and no exact lookup to judge it */
#endif
    :: else -> skip
    fi
  };
  if
  :: check == none ->
     atomic {
       found = false;
       if
       :: lookup_capability -> lookup(found)
       :: lookup_capability -> check = wait     /* the lookup failed: refuse, never resend blind */
       :: else -> skip
       fi;
       if
       :: found -> check = already_sent;
          if :: status != succeeded -> status = succeeded :: else -> skip fi
       :: else -> skip
       fi
     };
     if
     :: check == none ->
        atomic {
          if
#ifdef UNCHECKED_REPROCESS
          :: (status == held || status == failed || status == unknown || status == sending) &&
             lease_left <= 0 -> status = retry_wait; check = ready
#else
          :: (status == held || status == failed || status == unknown || status == sending ||
              status == retry_wait) && lease_left <= 0 && lease_attempt == read_lease_attempt &&
             NO_LEASE_SINCE_HOLD -> status = retry_wait; check = ready  /* no attempt took a lease since */
#endif
          :: else -> check = wait
          fi
        }
     :: else -> skip
     fi
  :: else -> skip
  fi
}

/* OperatorDesk.moved(): the row moved past the hold; the run takes the row's word and waits again. */
inline adopt() {
  if
  :: status == discarded -> reply_state = discarded
  :: status == failed -> reply_state = failed
  :: else -> reply_state = held
  fi;
  hold = lease_attempt
}

/* judge(): resolve mark-sent and discard are accepted in these states. */
#define DECIDABLE (reply_state == held || reply_state == awaiting_approval || reply_state == failed)

/* handleEvent(): EffectAttempt's send loop and lookUpUnknown (workflows/effect-attempt.ts), and the
 * operator desk's awaitDecision (workflows/operator-desk.ts) with every decision. Code
 * between two awaits of the workflow is one step. */
active proctype handleEvent() {
  mtype reply_state = received;
  mtype outcome = none;
  mtype check = none;
  byte read_lease_attempt = 0;
  bool found = false;
  byte tries = 0;
  byte resends = 0;
  /* What a reset goes back to: the moment a resend last awaited approval. */
  bool asked = false;
  byte asked_hold = 0;
  byte asked_resends = 0;
  byte resets = 0;

  /* The target: sandbox-blind, sandbox-lookup (Slack), LINE push (key, no lookup), sandbox. */
#ifdef TARGET
  idempotency_key = TARGET / 2; lookup_capability = TARGET % 2;
#else
  if
  :: idempotency_key = false; lookup_capability = false
  :: idempotency_key = false; lookup_capability = true
  :: idempotency_key = true; lookup_capability = false
  :: idempotency_key = true; lookup_capability = true
  fi;
#endif

  do
  :: executeSend(outcome);
     if
     :: outcome == succeeded -> reply_state = succeeded; break
     :: outcome == failed -> reply_state = failed; hold = lease_attempt
     :: outcome == activity_failed -> atomic { recordResult(failed); reply_state = failed; hold = lease_attempt }
     :: outcome == unknown ->
        /* lookUpUnknown(): once the owner's lease expired, look; "not found yet" is not proof, so look
         * again after the consistency delay. */
        reply_state = unknown; found = false;
        if
        :: lookup_capability ->
           atomic {
             (lease_left <= 0) -> lookupOrFail(found);
             if :: !found -> timer = CONSISTENCY_DELAY :: else -> skip fi
           };
           if :: !found -> atomic { (timer == 0) -> lookupOrFail(found) } :: else -> skip fi
        :: else -> skip
        fi;
        if
        :: found -> atomic { recordResult(succeeded); reply_state = succeeded }; break
        :: else -> atomic { recordResult(held); reply_state = held; hold = lease_attempt }
        fi
     fi;

     /* OperatorDesk.awaitDecision(): people decide, at any time; nothing resolves on its own. */
     check = none;
     do
     :: break                       /* nobody decides: held reminds forever, failed parks, then ends */
     :: DECIDABLE -> atomic { recordResult(succeeded); reply_state = succeeded }; break  /* mark-sent */
     :: DECIDABLE -> atomic { recordResult(discarded); reply_state = discarded }; break  /* discard */
     :: reply_state == held && resends < MAX_RESENDS && resets == 0 &&
        (lookup_capability || delivered == 0) ->
        reply_state = awaiting_approval;         /* resolve resend; a blind target is checked by hand */
#if MAX_RESETS > 0
        asked = true; asked_hold = hold; asked_resends = resends
#else
        skip
#endif
     /* temporal workflow reset to that moment, once the approved resend went out: the approval counts
      * again. (Decisions people make after a reset are the ones before it, bounded the same way.) */
     :: asked && resets < MAX_RESETS && resends > asked_resends ->
        reply_state = awaiting_approval; hold = asked_hold; resends = asked_resends; resets++
     :: reply_state == awaiting_approval ->
        prepareResend(check);                    /* approve, by a different person */
        if
        :: check == already_sent -> reply_state = succeeded; break
        :: check == wait -> reply_state = held
        :: check == moved -> adopt()
        :: check == ready -> resends++; break
        fi
     :: reply_state == failed && resends < MAX_RESENDS && resets == 0 ->
        prepareResend(check);                    /* reprocess */
        if
        :: check == already_sent -> reply_state = succeeded; break
        :: check == wait -> skip
        :: check == moved -> adopt()
        :: check == ready -> resends++; break
        fi
     od;
     if
     :: check == ready -> skip      /* the same protocol runs again, same key, same text */
     :: else -> break
     fi
  od;
  /* awaiting_approval is held, waiting for its second person. */
  assert(reply_state == succeeded || reply_state == held || reply_state == awaiting_approval ||
         reply_state == failed || reply_state == discarded)
}
