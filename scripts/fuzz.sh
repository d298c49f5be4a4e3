#!/usr/bin/env bash
# Runs every go test -fuzz target of the main module for FUZZTIME each (default 30s).
# Usage: [TAGS=isal] scripts/fuzz.sh [FUZZTIME]  (TAGS: build tags, as the Makefile sets them)
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-30s}"
status=0
while IFS=: read -r file _ decl; do
  pkg="./$(dirname "$file")"
  name="$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$decl")"
  echo "== $pkg $name ($fuzztime)"
  if ! go test -tags "${TAGS:-}" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
    status=1
  fi
done < <(grep -rn --include='*_test.go' '^func Fuzz' . | grep -v '^./conformance/' | sed -E 's#^\./##' | sort)
# The conformance module's differential fuzzers (our Validate vs opm's; what
# prune.Filter keeps vs the selection oracle).
for name in FuzzValidateAgreement FuzzSelectionAgreement; do
  echo "== ./conformance $name ($fuzztime)"
  if ! (cd conformance && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" .); then
    status=1
  fi
done
exit $status
