#!/usr/bin/env bash
# Model-checks the send protocol with spin (model/send.pml) and prints the state counts of each run.
# Passes only when the protocol shows 0 errors and every variant with a safeguard removed shows the
# double reply (>= 1 error), so that the check is known to be able to fail. `--trail` also prints the
# steps of each counterexample found.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
show_trail=false
[ "${1:-}" = "--trail" ] && show_trail=true

for tool in spin gcc; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "model: $tool is not installed (Debian/Ubuntu: apt-get install $tool)" >&2
    exit 2
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$root"/model/*.pml "$work"/
cd "$work" || exit 2

# Exhaustive search (no bitstate), states stored compressed; a run that hits the memory limit or the
# depth limit is incomplete, and an incomplete run of the protocol proves nothing.
PAN_CC=(-O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=2048)
PAN_RUN=(-m200000)

ok=true
printf '%-60s %14s %14s %7s  %s\n' "check" "states stored" "transitions" "errors" "verdict"

# check <label> <model file> <expect: pass|fail> <what> [spin -D flags...]
#   what: `ltl` checks the at_most_one_reply claim; `ends` checks assertions and invalid end states.
check() {
  local label=$1 model=$2 expect=$3 what=$4
  shift 4
  local cc=("${PAN_CC[@]}") run=("${PAN_RUN[@]}")
  if [ "$what" = ltl ]; then run+=(-N at_most_one_reply); else cc+=(-DNOCLAIM); fi
  rm -f pan pan.* ./*.trail
  if ! spin -a "$@" "$model" >spin.log 2>&1 || ! gcc "${cc[@]}" -o pan pan.c >gcc.log 2>&1; then
    echo "model: could not build the verifier for $label" >&2
    cat spin.log gcc.log >&2
    ok=false
    return
  fi
  local start=$SECONDS
  ./pan "${run[@]}" >pan.log 2>&1
  local stored transitions errors complete=true verdict
  stored=$(grep -oE '^ *[0-9]+ states, stored' pan.log | grep -oE '[0-9]+' | head -n 1)
  transitions=$(grep -oE '^ *[0-9]+ transitions' pan.log | grep -oE '[0-9]+' | head -n 1)
  errors=$(grep -oE 'errors: [0-9]+' pan.log | grep -oE '[0-9]+' | head -n 1)
  grep -qE 'Search not completed|max search depth too small|out of memory' pan.log && complete=false
  if [ -z "$errors" ]; then
    verdict="FAILED: no result from spin"
    ok=false
    cat pan.log >&2
  elif [ "$expect" = pass ] && [ "$errors" -eq 0 ] && $complete; then
    verdict="ok: none, exhaustive"
  elif [ "$expect" = pass ]; then
    verdict=$([ "$errors" -gt 0 ] && echo "FAILED: counterexample found" || echo "FAILED: search incomplete")
    ok=false
  elif [ "$errors" -ge 1 ]; then
    verdict="ok: found, as it must be"
  else
    verdict="FAILED: the check cannot tell this variant from the protocol"
    ok=false
  fi
  printf '%-60s %14s %14s %7s  %s (%ss)\n' "$label" "${stored:-?}" "${transitions:-?}" "$errors" "$verdict" \
    "$((SECONDS - start))"
  if [ "$errors" != 0 ] && { $show_trail || [ "$expect" = pass ]; }; then
    # The counterexample, cut to the steps that change the row, the target or the workflow's state.
    spin -t -p -g "$@" "$model" 2>&1 |
      grep -E '^ *[0-9]+:\s+proc' |
      grep -E '\[(status = |delivered = |reply_state = |answer = |outcome = |check = |\(run send)' | grep -v '= none\]' |
      sed -E 's/^ *[0-9]+:\s+//; s/\(state [0-9]+\)\s*//' | sed 's/^/    /'
  fi
}

check "send.pml: at most one reply ([] delivered <= 1)" send.pml pass ltl
check "send.pml: every event ends (assertions, invalid end states)" send.pml pass ends
check "send-no-lease.pml: at most one reply (lease check removed)" send-no-lease.pml fail ltl
check "send.pml -DUNCHECKED_REPROCESS: at most one reply (pre-fix)" send.pml fail ltl -DUNCHECKED_REPROCESS
# A reset that re-delivers an approval: checked for the targets a resend can double (no key), once with
# the decision bound to its hold and once without (keyed targets dedupe any resend; with resets their
# search outgrows the memory limit).
check "send.pml -DMAX_RESETS=1, target without key or lookup: at most one reply" send.pml pass ltl \
  -DMAX_RESETS=1 -DTARGET=0
check "send.pml -DMAX_RESETS=1, target with lookup, no key: at most one reply" send.pml pass ltl \
  -DMAX_RESETS=1 -DTARGET=1
check "send.pml -DMAX_RESETS=1 -DUNBOUND_DECISIONS: at most one reply (pre-fix)" send.pml fail ltl \
  -DMAX_RESETS=1 -DTARGET=0 -DUNBOUND_DECISIONS

if $ok; then
  echo "model: the protocol holds, and each variant without a safeguard fails"
  exit 0
fi
echo "model: FAILED" >&2
exit 1
