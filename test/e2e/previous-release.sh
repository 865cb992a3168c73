#!/usr/bin/env bash
# The release the upgrade tests start from (test/e2e/previous-release.env names its commit),
# made the way this repository makes its own: the commit's tree from git, its project image
# built from that tree's Dockerfile and `make docker-build` on the same base images
# (test/images/build-images.sh --project-tree, tagged :previous), and its deploy/ rendered
# through that tree's own test/e2e/deploy kustomization, pointed at the :previous image.
#
#   test/e2e/previous-release.sh BIN_DIR IMAGES_DIR OUT_DIR
#       BIN_DIR     holds kubectl (test/controlplane/build-binaries.sh --print-dir)
#       IMAGES_DIR  gets kube-extended-resource-previous.tar (and its .spdx.json)
#       OUT_DIR     gets deploy.yaml (the rendered manifests) and crds/ (the release's CRDs)
#
# Prints the commit. The tree is kept in <repo>/.cache/releases/COMMIT; the image is cached
# like the others (test/images/README.md), so a second run takes seconds and the first about as
# long as a cold build of the project image. A clone without the commit (a shallow one) fetches
# it from origin, or fails saying so.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
log() { printf '[previous-release] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
(($# == 3)) || {
  sed -n '2,17s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}
bin_dir=$1 images=$2 out=$3
[[ -x "$bin_dir/kubectl" ]] || die "no kubectl in $bin_dir"

commit=$(sed -n 's/^PREVIOUS_RELEASE=//p' "$here/previous-release.env")
[[ "$commit" =~ ^[0-9a-f]{40}$ ]] || die "no PREVIOUS_RELEASE=<40 hex digits> in $here/previous-release.env"
if ! git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null; then
  log "commit $commit is not in this clone; fetching it from origin"
  timeout 300 git -C "$root" fetch -q --no-tags origin "$commit" ||
    die "commit $commit (the previous release) is neither in this clone nor fetchable from origin: clone with full history"
fi

tree=$root/.cache/releases/$commit
if [[ ! -f "$tree/.complete" ]]; then
  rm -rf "$tree"
  mkdir -p "$tree"
  git -C "$root" archive --format=tar "$commit" | tar -x -C "$tree" || die "git archive $commit failed"
  touch "$tree/.complete"
fi

log "building the image of $commit (as long as a cold project image build the first time)"
"$root/test/images/build-images.sh" "$images" --only kube-extended-resource \
  --project-tree "$tree" --project-tag previous >/dev/null

rm -rf "$out"
mkdir -p "$out"
cp -r "$tree/crds" "$out/crds"
"$bin_dir/kubectl" kustomize --load-restrictor=LoadRestrictionsNone "$tree/test/e2e/deploy" |
  sed 's#^\( *image: \)localhost/kube-extended-resource:dev$#\1localhost/kube-extended-resource:previous#' \
    >"$out/deploy.yaml"
grep -q 'image: localhost/kube-extended-resource:previous$' "$out/deploy.yaml" ||
  die "the rendered manifests of $commit name no localhost/kube-extended-resource image"
! grep -q 'kube-extended-resource:dev' "$out/deploy.yaml" ||
  die "the rendered manifests of $commit still name the :dev image"
echo "$commit"
