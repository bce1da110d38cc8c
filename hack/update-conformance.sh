#!/usr/bin/env bash
# Re-copies the conformance fixtures (example manifests, converter fixtures)
# from a directory holding examples/ and karpenter-convert/.
# Usage: hack/update-conformance.sh SOURCE_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $# -ne 1 ]]; then
  echo "usage: hack/update-conformance.sh SOURCE_DIR (the directory holding examples/ and karpenter-convert/)" >&2
  exit 2
fi
src=$1
if [[ ! -d "$src/examples" || ! -d "$src/karpenter-convert" ]]; then
  echo "update-conformance: $src has no examples/ and karpenter-convert/ directories" >&2
  exit 1
fi
rm -rf "$root/test/conformance/examples" "$root/test/conformance/karpenter-convert"
cp -r "$src/examples" "$src/karpenter-convert" "$root/test/conformance/"
chmod -R u+w "$root/test/conformance"
echo "update-conformance: copied fixtures from $src"
