#!/bin/sh
# One-shot (temporalio/admin-tools, or any machine with the `temporal` CLI): makes NAMESPACE exist with
# RETENTION and registers SEARCH_ATTRIBUTES ("Name=Type Name=Type …"). Idempotent: an attribute that
# already exists with the same type is accepted, a retention already set is set again.
set -eu
: "${TEMPORAL_ADDRESS:?set TEMPORAL_ADDRESS}"
: "${NAMESPACE:?set NAMESPACE}"
: "${RETENTION:?set RETENTION, e.g. 7d}"
: "${SEARCH_ATTRIBUTES:?set SEARCH_ATTRIBUTES}"
temporal=${TEMPORAL_CLI:-temporal}

attempt=1
until "$temporal" operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
  if [ "$attempt" -ge 60 ]; then
    echo "Temporal at $TEMPORAL_ADDRESS is not serving after $attempt attempts" >&2
    exit 1
  fi
  attempt=$((attempt + 1))
  sleep 2
done

if "$temporal" operator namespace describe --address "$TEMPORAL_ADDRESS" --namespace "$NAMESPACE" >/dev/null 2>&1; then
  "$temporal" operator namespace update --address "$TEMPORAL_ADDRESS" --namespace "$NAMESPACE" --retention "$RETENTION"
else
  "$temporal" operator namespace create --address "$TEMPORAL_ADDRESS" --namespace "$NAMESPACE" --retention "$RETENTION"
fi

set --
for attribute in $SEARCH_ATTRIBUTES; do
  set -- "$@" --name "${attribute%%=*}" --type "${attribute#*=}"
done
# A new namespace reaches every frontend's cache a moment after it was created: retry until it has.
attempt=1
until "$temporal" operator search-attribute create --address "$TEMPORAL_ADDRESS" --namespace "$NAMESPACE" "$@"; do
  if [ "$attempt" -ge 30 ]; then
    echo "could not register the search attributes in $NAMESPACE" >&2
    exit 1
  fi
  attempt=$((attempt + 1))
  sleep 2
done
echo "namespace $NAMESPACE: retention $RETENTION, search attributes $SEARCH_ATTRIBUTES"
