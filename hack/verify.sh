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

# Kubernetes libraries stay on the 1.36 line (k8s.io/* v0.36.x) with
# controller-runtime v0.24.x: the control plane we test against is 1.36.
drift=$(go list -m -f '{{.Path}} {{.Version}}' all | awk '
  $1 ~ /^k8s\.io\/(api|apimachinery|client-go|apiextensions-apiserver|apiserver|component-base|component-helpers|cli-runtime|kms)$/ && $2 !~ /^v0\.36\./ {print}
  $1 == "sigs.k8s.io/controller-runtime" && $2 !~ /^v0\.24\./ {print}')
if [[ -n "$drift" ]]; then
  echo "verify: Kubernetes libraries drifted off the pinned 1.36 line (use go get <module>@v0.36.x):" >&2
  echo "$drift" >&2
  status=1
fi

if ! go vet ./...; then
  echo "verify: go vet failed" >&2
  status=1
fi
exit $status
