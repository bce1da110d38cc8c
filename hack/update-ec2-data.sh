#!/usr/bin/env bash
# Re-copies the EC2 instance-type facts and on-demand prices that the embedded
# catalog (internal/catalog) is generated from into hack/data/ec2, verbatim.
#
# Usage: hack/update-ec2-data.sh SOURCE_DIR
#   SOURCE_DIR holds instance-types.json, pricing-on-demand.json and their
#   README.md; a relative path is taken from the repository root.
#
# Afterwards run `go generate ./internal/catalog/...` and commit both the data
# and internal/catalog/zz_generated.catalog.json.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $# -ne 1 ]]; then
  echo "usage: hack/update-ec2-data.sh SOURCE_DIR (the directory holding instance-types.json, pricing-on-demand.json and README.md)" >&2
  exit 2
fi
src=$1
files=(instance-types.json pricing-on-demand.json README.md)

# A relative SOURCE_DIR is taken from the repository root, so the script
# behaves the same from any working directory.
case $src in
/*) ;;
*) src=$root/$src ;;
esac

if [[ ! -d $src ]]; then
  echo "update-ec2-data: source directory $src does not exist; pass the directory that holds ${files[*]}" >&2
  exit 1
fi
for f in "${files[@]}"; do
  if [[ ! -f $src/$f ]]; then
    echo "update-ec2-data: $src/$f is missing; nothing was copied" >&2
    exit 1
  fi
done

dst=$root/hack/data/ec2
mkdir -p "$dst"
for f in "${files[@]}"; do
  cp "$src/$f" "$dst/$f"
  chmod 0644 "$dst/$f"
done
echo "update-ec2-data: copied ${files[*]} from $src to hack/data/ec2"
echo "update-ec2-data: now run: go generate ./internal/catalog/... && go test ./internal/catalog/..."
