#!/usr/bin/env bash
# Fails when generated files are stale (a diff after `make generate`), when a
# generated file is untracked, or when Go code is not gofmt-ed. Runs the same
# way on every machine: there is no CI-only branch.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

paths=("$@")
status=0

if ! git diff --exit-code --stat -- "${paths[@]}"; then
  echo "verify: generated files are stale; run 'make generate' and commit the result" >&2
  status=1
fi

untracked=$(git ls-files --others --exclude-standard -- "${paths[@]}")
if [[ -n "$untracked" ]]; then
  echo "verify: untracked generated files (commit them or remove them):" >&2
  echo "$untracked" >&2
  status=1
fi

unformatted=$(git ls-files -- '*.go' | xargs gofmt -l)
if [[ -n "$unformatted" ]]; then
  echo "verify: gofmt would change:" >&2
  echo "$unformatted" >&2
  status=1
fi

if ! go vet ./...; then
  echo "verify: go vet failed" >&2
  status=1
fi
exit $status
