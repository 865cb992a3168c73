#!/usr/bin/env bash
# Builds, without any container registry, the images the end-to-end tests run and writes each
# as a tarball `ctr -n k8s.io images import` loads (docker-archive, names kept):
#
#   OUT_DIR/kube-extended-resource.tar  localhost/kube-extended-resource:dev (the Dockerfile,
#                                       via `make docker-build`), also named
#                                       docker.io/library/kube-extended-resource:dev, the
#                                       name deploy/*.yaml's `kube-extended-resource:dev` means
#   OUT_DIR/kube-scheduler.tar          registry.k8s.io/kube-scheduler:<KUBERNETES_VERSION>,
#                                       the pinned static binary at /usr/local/bin/kube-scheduler
#   OUT_DIR/ker-busybox.tar             localhost/ker-busybox:1: busybox-static; default
#                                       command sleeps until SIGTERM (also a pod sandbox image)
#   OUT_DIR/kube-extended-resource.spdx.json  the project image's SBOM (SPDX 2.3 JSON), checked
#                                       against tools/image/debian-packages.lock
#
# Usage: build-images.sh OUT_DIR [--bin-dir DIR] [--rebuild] [--only NAME]...
#                        [--project-tree DIR --project-tag TAG]
#   --only NAME    build only this image (kube-extended-resource, kube-scheduler, ker-busybox;
#                  repeatable): `make run` needs just ker-busybox
#   --project-tree DIR, --project-tag TAG
#                  build the project image from another source tree (an earlier release's,
#                  from `git archive`) with its own Dockerfile and `make docker-build`, as
#                  localhost/kube-extended-resource:TAG (and the docker.io/library/ alias);
#                  OUT_DIR gets kube-extended-resource-TAG.tar and its .spdx.json. TAG is not dev.
#   --bin-dir DIR  folder holding kube-scheduler (default: test/controlplane/build-binaries.sh
#                  --print-dir; run `make controlplane-binaries` first)
#   --rebuild      ignore the caches (the base image too) and build everything again
#
# When debian:bookworm / debian:bookworm-slim are not in podman's storage, the Dockerfile's
# base is localhost/ker-debian:bookworm, made once with `debootstrap --variant=minbase` from the
# Debian mirror apt uses here and slimmed like debian:*-slim. Caches: podman's storage plus
# <repo>/.cache/images/ (base rootfs and image tarballs, keyed by a fingerprint of their inputs:
# for the project image the Dockerfile, .dockerignore, the files its COPY lines name and the base
# images; IMAGES_CACHE_DIR moves that folder). Needs root and podman (debootstrap and
# busybox-static for the first run).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$here/../.." && pwd)

# Bump when what a step produces changes, so caches made by the old recipe are rebuilt.
BASE_RECIPE=1 PROJECT_RECIPE=1 SCHEDULER_RECIPE=1 BUSYBOX_RECIPE=1

BUSYBOX_REF=localhost/ker-busybox:1
LOCAL_BASE_REF=localhost/ker-debian:bookworm
SUITE=bookworm

# Upper bounds (seconds) of each step.
T_DEBOOTSTRAP=${T_DEBOOTSTRAP:-1200}
T_PROJECT_BUILD=${T_PROJECT_BUILD:-5400}
T_PODMAN=${T_PODMAN:-600}
T_LOCK=${T_LOCK:-7200}

log() { printf '[images] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; }

out_dir='' bin_dir='' rebuild=false only=() project_tree='' project_tag=dev
while (($#)); do
  case "$1" in
  -h | --help)
    usage
    exit 0
    ;;
  --bin-dir)
    (($# >= 2)) || die "--bin-dir needs a folder"
    bin_dir=$2
    shift
    ;;
  --bin-dir=*) bin_dir=${1#*=} ;;
  --rebuild) rebuild=true ;;
  --project-tree | --project-tag)
    (($# >= 2)) || die "$1 needs a value"
    case "$1" in
    --project-tree) project_tree=$2 ;;
    --project-tag) project_tag=$2 ;;
    esac
    shift
    ;;
  --only)
    (($# >= 2)) || die "--only needs an image name"
    case "$2" in
    kube-extended-resource | kube-scheduler | ker-busybox) only+=("$2") ;;
    *) die "--only: no image '$2' (kube-extended-resource, kube-scheduler or ker-busybox)" ;;
    esac
    shift
    ;;
  -*) die "unknown option '$1' (try --help)" ;;
  *)
    [[ -z "$out_dir" ]] || die "one OUT_DIR only (got '$out_dir' and '$1')"
    out_dir=$1
    ;;
  esac
  shift
done
[[ -n "$out_dir" ]] || die "missing OUT_DIR (try --help)"
if [[ -n "$project_tree" ]]; then
  [[ "$project_tag" =~ ^[a-z0-9][a-z0-9._-]*$ && "$project_tag" != dev ]] ||
    die "--project-tree needs --project-tag TAG (lower case, not dev), got '$project_tag'"
  [[ -f "$project_tree/Dockerfile" && -f "$project_tree/Makefile" ]] ||
    die "--project-tree $project_tree holds no Dockerfile and Makefile"
  project_root=$(cd "$project_tree" && pwd)
  project_name=kube-extended-resource-$project_tag
else
  [[ "$project_tag" == dev ]] || die "--project-tag needs --project-tree"
  project_root=$REPO_ROOT project_name=kube-extended-resource
fi
PROJECT_REF=localhost/kube-extended-resource:$project_tag
PROJECT_ALIAS=docker.io/library/kube-extended-resource:$project_tag

[[ $(id -u) -eq 0 ]] || die "run as root (podman's root storage, debootstrap)"
command -v podman >/dev/null || die "podman is not installed (apt-get install podman, or make deps)"

mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
cache=${IMAGES_CACHE_DIR:-$REPO_ROOT/.cache/images}
mkdir -p "$cache"

t_start=$SECONDS
# One run at a time per cache.
exec 9>"$cache/.lock"
if ! flock -n 9; then
  log "waiting for another build-images.sh (up to ${T_LOCK}s)"
  flock -w "$T_LOCK" 9 || die "timed out waiting for $cache/.lock"
fi

# podman with a time bound; SIGTERM first so podman can clean its containers up.
pm() {
  local t=$1
  shift
  timeout --kill-after=60 "$t" podman "$@"
}
image_id() { podman image inspect --format '{{.Id}}' "$1" 2>/dev/null; }
image_size() { # human size of an image
  local bytes
  bytes=$(podman image inspect --format '{{.Size}}' "$1")
  echo "$((bytes / 1000000)) MB"
}
sha() { sha256sum | cut -c1-16; }
is_static() { # (ldd fails on static binaries: read its output, not its status)
  local out
  out=$(ldd "$1" 2>&1 || true)
  [[ "$out" == *'not a dynamic executable'* || "$out" == *'statically linked'* ]]
}

# ---------------------------------------------------------------- cleanup of temporary rootfs
tmp_dirs=()
# Unmounts anything left mounted under $1 (debootstrap mounts /proc, /sys and may bind /dev),
# then deletes it; refuses to delete while something is still mounted there.
remove_tree() {
  local d=$1 m mounts
  [[ -d "$d" ]] || return 0
  for _ in 1 2 3; do
    mapfile -t mounts < <(awk -v p="$d/" 'index($2, p) == 1 { print $2 }' /proc/self/mounts | sort -r)
    ((${#mounts[@]} == 0)) && break
    for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  done
  if awk -v p="$d/" 'index($2, p) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
    log "NOT deleting $d: something is still mounted under it (see /proc/self/mounts)"
    return 1
  fi
  rm -rf --one-file-system "$d"
}
cleanup() {
  local d
  for d in "${tmp_dirs[@]}"; do remove_tree "$d" || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Sets tmp to a new folder that is removed on exit (not in $(...): tmp_dirs must see it).
new_tmp_dir() {
  tmp=$(mktemp -d "$cache/tmp.XXXXXX")
  tmp_dirs+=("$tmp")
}

# ------------------------------------------------------------------------- cached image helper
# Deletes NAME's cached tarballs and ids of any fingerprint (not those of NAME-TAG, another
# image whose name starts the same).
remove_older_fingerprints() {
  local f
  for f in "$cache/$1"-*; do
    [[ "${f##*/}" =~ ^"$1"-[0-9a-f]{16}\.(tar|id)$ ]] && rm -f "$f"
  done
  return 0
}
# ensure_image NAME REF FINGERPRINT BUILD_FUNCTION [EXTRA_REF...]
# Makes REF (and the EXTRA_REFs, same image) present in podman and $cache/NAME-FINGERPRINT.tar
# (docker-archive of all the refs), then links that to $out_dir/NAME.tar. Reuses, in order: the
# image in podman if its id is the one recorded for FINGERPRINT, the cached tarball (podman
# load), and only then calls BUILD_FUNCTION (which must leave REF in podman).
ensure_image() {
  local name=$1 ref=$2 fp=$3 build=$4
  shift 4
  local extra=("$@")
  local tar=$cache/$name-$fp.tar idf=$cache/$name-$fp.id have='' id r t0=$SECONDS

  if ! $rebuild && [[ -f "$idf" ]] && id=$(image_id "$ref") && [[ "$id" == "$(cat "$idf")" ]]; then
    have=podman
  fi
  if [[ -z "$have" ]] && ! $rebuild && [[ -f "$tar" ]]; then
    log "$name: loading the cached $tar"
    if pm "$T_PODMAN" load -q -i "$tar" >/dev/null && id=$(image_id "$ref"); then
      echo "$id" >"$idf"
      have=tarball
    else
      log "$name: the cached tarball does not load; rebuilding"
      rm -f "$tar" "$idf"
    fi
  fi
  if [[ -z "$have" ]]; then
    log "$name: building $ref"
    remove_older_fingerprints "$name"
    "$build"
    id=$(image_id "$ref") || die "$name: the build left no image $ref"
    echo "$id" >"$idf"
  fi
  for r in "${extra[@]}"; do pm "$T_PODMAN" tag "$ref" "$r"; done
  if [[ ! -f "$tar" ]]; then
    pm "$T_PODMAN" save -q --format docker-archive -o "$tar.partial" "$ref" "${extra[@]}" >/dev/null ||
      die "$name: podman save failed"
    mv -f "$tar.partial" "$tar"
  fi
  rm -f "$out_dir/$name.tar"
  ln "$tar" "$out_dir/$name.tar" 2>/dev/null || cp "$tar" "$out_dir/$name.tar"
  log "$name: $ref $(image_size "$ref") (${have:-built}, $((SECONDS - t0))s) -> $out_dir/$name.tar"
}

# ------------------------------------------------------------------------------ Debian base
# The Debian mirror apt uses here: first deb URI serving $SUITE (deb822 .sources files first,
# then one-line sources.list entries); the security mirror likewise for $SUITE-security.
apt_uri() { # suite
  local suite=$1 f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    awk -v s="$suite" '
      function flush() { if (deb && uri != "" && hit) { print uri; found = 1; exit } deb = 0; uri = ""; hit = 0 }
      /^[[:space:]]*$/ { flush(); next }
      /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) hit = 1 }
      /^Enabled:[[:space:]]*no/ { deb = 0 }
      END { if (!found) flush() }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    awk -v s="$suite" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ } if ($(i + 1) == s) print $i }' "$f"
  done
}

# Slims a debootstrapped rootfs like debian:*-slim and points apt at the local mirror.
slim_rootfs() { # dir mirror security-mirror
  local d=$1 mirror=$2 security=$3
  mkdir -p "$d/etc/dpkg/dpkg.cfg.d" "$d/etc/apt/apt.conf.d"
  cat >"$d/etc/dpkg/dpkg.cfg.d/ker-slim" <<'EOF'
# as in debian:*-slim: no docs (but copyrights), manuals or translations
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
EOF
  cat >"$d/etc/apt/apt.conf.d/ker-clean" <<'EOF'
// as in debian:* images: no .deb cache, no translations, no recommends or suggests
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
APT::Install-Recommends "false";
APT::Install-Suggests "false";
EOF
  rm -f "$d/etc/apt/sources.list"
  {
    printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$mirror" "$SUITE" "$SUITE"
    [[ -z "$security" ]] ||
      printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$security" "$SUITE"
  } >"$d/etc/apt/sources.list.d/debian.sources"
  find "$d/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
  find "$d/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  rm -rf "$d"/usr/share/{man,groff,info,lintian,linda,locale}/* \
    "$d"/var/cache/apt/archives/*.deb "$d"/var/cache/apt/*.bin "$d"/var/lib/apt/lists/* \
    "$d"/var/log/* "$d"/tmp/* "$d"/root/.bash_history "$d"/var/cache/debconf/*-old
  # host-specific files debootstrap copies in; the container runtime provides its own
  rm -f "$d/etc/resolv.conf" "$d/etc/hostname" "$d/etc/machine-id"
  : >"$d/etc/hostname"
}

base_mirror=$(apt_uri "$SUITE" | head -n 1)
base_security=$(apt_uri "$SUITE-security" | head -n 1)
base_fp=$(printf '%s\n' "$BASE_RECIPE" "$SUITE" "$base_mirror" "$base_security" "$(uname -m)" | sha)
base_tar=$cache/ker-debian-$SUITE-$base_fp.rootfs.tar

import_base() {
  pm "$T_PODMAN" import -q \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' --change "LABEL io.ker.base-fingerprint=$base_fp" \
    "$base_tar" "$LOCAL_BASE_REF" >/dev/null || die "podman import of $base_tar failed"
}

ensure_local_base() {
  local label t0=$SECONDS d
  label=$(podman image inspect --format '{{index .Labels "io.ker.base-fingerprint"}}' "$LOCAL_BASE_REF" 2>/dev/null || true)
  if ! $rebuild && [[ "$label" == "$base_fp" ]]; then
    log "base: reusing $LOCAL_BASE_REF"
    return
  fi
  if ! $rebuild && [[ -f "$base_tar" ]]; then
    log "base: importing the cached $base_tar"
    import_base
    log "base: $LOCAL_BASE_REF $(image_size "$LOCAL_BASE_REF") ($((SECONDS - t0))s)"
    return
  fi
  [[ -n "$base_mirror" ]] || die "no Debian mirror serving '$SUITE' in /etc/apt/sources.list{,.d/*} to debootstrap from"
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap, or make deps)"
  new_tmp_dir
  d=$tmp/rootfs
  log "base: debootstrap --variant=minbase $SUITE from $base_mirror (about a minute)"
  if ! timeout --kill-after=30 "$T_DEBOOTSTRAP" debootstrap --variant=minbase "$SUITE" "$d" "$base_mirror" \
    >"$cache/debootstrap.log" 2>&1; then
    tail -n 20 "$cache/debootstrap.log" >&2
    die "debootstrap failed or took over ${T_DEBOOTSTRAP}s (log: $cache/debootstrap.log)"
  fi
  slim_rootfs "$d" "$base_mirror" "$base_security"
  rm -f "$cache"/ker-debian-"$SUITE"-*.rootfs.tar
  tar --numeric-owner --xattrs -C "$d" -cf "$base_tar.partial" . || die "could not archive the rootfs"
  mv -f "$base_tar.partial" "$base_tar"
  remove_tree "$(dirname "$d")" || die "could not remove $d"
  import_base
  log "base: $LOCAL_BASE_REF $(image_size "$LOCAL_BASE_REF") (debootstrap, $((SECONDS - t0))s)"
}

# The Dockerfile's defaults when podman has them, else the local debootstrapped base.
resolve_bases() {
  build_base=docker.io/library/debian:bookworm runtime_base=docker.io/library/debian:bookworm-slim
  if ! podman image exists "$build_base" || ! podman image exists "$runtime_base"; then
    ensure_local_base
    podman image exists "$build_base" || build_base=$LOCAL_BASE_REF
    podman image exists "$runtime_base" || runtime_base=$LOCAL_BASE_REF
  fi
  log "bases: build $build_base, runtime $runtime_base"
}

# -------------------------------------------------------------------------- project image
# Files the project image is built from: the sources of the Dockerfile's COPY lines (not
# --from ones), relative to the repository root.
copy_sources() {
  local line words w i
  while IFS= read -r line; do
    [[ "$line" =~ ^[[:space:]]*(COPY|ADD)[[:space:]] ]] || continue
    [[ "$line" == *"\\" || "$line" =~ (COPY|ADD)[[:space:]]+\[ ]] &&
      die "Dockerfile: multi-line or JSON-form COPY is not fingerprinted: $line"
    read -r -a words <<<"$line"
    [[ "$line" == *--from=* ]] && continue
    for ((i = 1; i < ${#words[@]} - 1; i++)); do
      w=${words[i]}
      [[ "$w" == --* ]] && continue
      printf '%s\n' "${w#./}"
    done
  done <"$project_root/Dockerfile"
}
# A base image's identity: the local base's recipe fingerprint (a re-import of the cached rootfs
# gets a new image id but has the same content), else its image id.
base_key() {
  local label
  label=$(podman image inspect --format '{{index .Labels "io.ker.base-fingerprint"}}' "$1" 2>/dev/null || true)
  if [[ -n "$label" && "$label" != '<no value>' ]]; then
    printf 'local-base:%s\n' "$label"
  else
    image_id "$1" || die "no base image $1"
  fi
}
project_fingerprint() {
  local -a srcs
  mapfile -t srcs < <(copy_sources)
  ((${#srcs[@]})) || die "found no COPY line in $project_root/Dockerfile"
  {
    printf '%s\n' "recipe=$PROJECT_RECIPE" "$(base_key "$build_base")" "$(base_key "$runtime_base")"
    cd "$project_root"
    sha256sum Dockerfile .dockerignore
    find "${srcs[@]}" \( -type f -o -type l \) -not -name '*.swp' -not -name '*.md' -print0 | LC_ALL=C sort -z |
      xargs -0 sha256sum
  } | sha
}
build_project() {
  local rc blog=$cache/docker-build.log
  log "$project_name: make docker-build in $project_root (several minutes on 2 cores; log: $blog)"
  # The whole log to a file, the build steps and the result to stderr.
  set +e
  timeout --kill-after=60 "$T_PROJECT_BUILD" make -C "$project_root" --no-print-directory docker-build \
    CONTAINER_ENGINE=podman IMAGE="${PROJECT_REF%:*}" TAG="${PROJECT_REF##*:}" \
    BUILD_IMAGE="$build_base" RUNTIME_IMAGE="$runtime_base" 2>&1 |
    tee "$blog" | grep --line-buffered -E '^(\+ |\[[0-9]+/[0-9]+\] STEP|STEP|docker-build:|Error)' >&2
  rc=${PIPESTATUS[0]}
  set -e
  if ((rc != 0)); then
    tail -n 30 "$blog" >&2
    die "make docker-build failed (exit $rc$( ((rc == 124)) && echo ", over ${T_PROJECT_BUILD}s"); log: $blog)"
  fi
}

# The image's SBOM (the Dockerfile writes it from dpkg-query) to OUT_DIR, checked against the
# package lock: every runtime package of tools/image/debian-packages.lock at its locked version,
# and every binary the Dockerfile ships. A missing or incomplete SBOM fails the run.
SBOM_IN_IMAGE=/usr/share/doc/kube-extended-resource/sbom.spdx.json
PACKAGE_LOCK=$project_root/tools/image/debian-packages.lock
export_sbom() { # out-file
  local out=$1 c
  c=$(pm "$T_PODMAN" create -q "$PROJECT_REF" true) || die "podman create $PROJECT_REF failed"
  if ! pm "$T_PODMAN" cp "$c:$SBOM_IN_IMAGE" "$out.partial" >/dev/null; then
    podman rm -f "$c" >/dev/null || true
    die "$PROJECT_REF has no SBOM at $SBOM_IN_IMAGE"
  fi
  podman rm -f "$c" >/dev/null || true
  check_sbom "$out.partial" || die "the SBOM of $PROJECT_REF does not match $PACKAGE_LOCK (kept: $out.partial)"
  mv -f "$out.partial" "$out"
}
check_sbom() { # file
  local binaries
  binaries=$(sed -n 's/^ARG BINARIES="\(.*\)"$/\1/p' "$project_root/Dockerfile" | head -n 1)
  [[ -n "$binaries" ]] || die "no ARG BINARIES=\"...\" in $project_root/Dockerfile"
  if command -v python3 >/dev/null; then
    python3 - "$1" "$PACKAGE_LOCK" "$binaries" <<'EOF_PY'
import json, sys, urllib.parse
sbom_path, lock_path, binaries = sys.argv[1], sys.argv[2], sys.argv[3].split()
try:
    doc = json.load(open(sbom_path))
except ValueError as e:
    sys.exit(f"[images] SBOM: not JSON: {e}")
bad = []
if doc.get("spdxVersion") != "SPDX-2.3" or doc.get("SPDXID") != "SPDXRef-DOCUMENT":
    bad.append("not an SPDX-2.3 document")
pkgs = {}
for p in doc.get("packages", []):
    purls = [r.get("referenceLocator", "") for r in p.get("externalRefs", []) if r.get("referenceType") == "purl"]
    pkgs.setdefault(p.get("name"), []).append((p.get("versionInfo"), [urllib.parse.unquote(u) for u in purls]))
locked = [l.split()[1:3] for l in open(lock_path) if l.split() and l.split()[0] == "runtime"]
if not locked:
    bad.append(f"{lock_path} has no runtime packages")
for name, version in locked:
    have = pkgs.get(name, [])
    if not any(v == version and any(u.startswith(f"pkg:deb/debian/{name}@{version}?arch=") for u in purls)
               for v, purls in have):
        bad.append(f"{name} {version} (locked): " + (f"SBOM has {[v for v, _ in have]}" if have else "not in the SBOM"))
for b in binaries:
    if b not in pkgs:
        bad.append(f"binary {b}: not in the SBOM")
for m in bad:
    print(f"[images] SBOM: {m}", file=sys.stderr)
if bad:
    sys.exit(1)
names = {n for n, _ in locked}
deb = [p.get("name") for p in doc["packages"] if p.get("SPDXID", "").startswith("SPDXRef-deb-")]
unpinned = sorted(set(deb) - names)
if unpinned:
    print(f"[images] SBOM: warning: {len(unpinned)} Debian packages of the image are not in the lock "
          f"(from a base image other than the one it was refreshed with?): {' '.join(unpinned)}", file=sys.stderr)
deb = len(deb)
print(f"[images] SBOM: {len(doc['packages'])} packages ({deb} Debian); lists the {len(locked)} "
      f"locked runtime packages at their versions and the {len(binaries)} binaries", file=sys.stderr)
EOF_PY
  elif command -v jq >/dev/null; then
    local name version ok=0
    jq -e '.spdxVersion == "SPDX-2.3"' "$1" >/dev/null || {
      log "SBOM: not an SPDX-2.3 JSON document"
      return 1
    }
    while read -r name version; do
      jq -e --arg n "$name" --arg v "$version" \
        'any(.packages[]; .name == $n and .versionInfo == $v and any(.externalRefs[]?; .referenceType == "purl"))' \
        "$1" >/dev/null || {
        log "SBOM: $name $version (locked) is not in the SBOM"
        ok=1
      }
    done < <(awk '$1 == "runtime" { print $2, $3 }' "$PACKAGE_LOCK")
    for name in $binaries; do
      jq -e --arg n "$name" 'any(.packages[]; .name == $n)' "$1" >/dev/null || {
        log "SBOM: binary $name is not in the SBOM"
        ok=1
      }
    done
    return $ok
  else
    die "checking the SBOM needs python3 or jq"
  fi
}

# ----------------------------------------------------------------------- kube-scheduler image
versions=$REPO_ROOT/test/controlplane/versions.env
k8s_version=$(sed -n 's/^KUBERNETES_VERSION=//p' "$versions" | head -n 1)
[[ "$k8s_version" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || die "no KUBERNETES_VERSION=v1.X.Y in $versions"
SCHEDULER_REF=registry.k8s.io/kube-scheduler:$k8s_version
# Checked when its turn comes, after the other images (which stay cached) are built.
resolve_scheduler() {
  if [[ -z "$bin_dir" ]]; then
    bin_dir=$("$REPO_ROOT/test/controlplane/build-binaries.sh" --print-dir | tail -n 1) ||
      die "test/controlplane/build-binaries.sh --print-dir failed"
  fi
  scheduler_bin=$bin_dir/kube-scheduler
  [[ -x "$scheduler_bin" ]] ||
    die "no kube-scheduler in $bin_dir: run 'make controlplane-binaries' (or pass --bin-dir DIR)"
  # A FROM-scratch image has no loader or libraries: the binary must be static.
  is_static "$scheduler_bin" ||
    die "$scheduler_bin is dynamically linked; the image needs a static (CGO_ENABLED=0) build"
  if ! "$scheduler_bin" --version 2>/dev/null | grep -qF "$k8s_version"; then
    log "warning: $scheduler_bin --version does not say $k8s_version"
  fi
}
build_scheduler() {
  local ctx
  new_tmp_dir
  ctx=$tmp
  cp "$scheduler_bin" "$ctx/kube-scheduler"
  cat >"$ctx/Containerfile" <<'EOF'
FROM scratch
COPY kube-scheduler /usr/local/bin/kube-scheduler
ENV PATH=/usr/local/bin:/usr/bin:/bin
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kube-scheduler"]
EOF
  pm "$T_PODMAN" build -q --network=host -f "$ctx/Containerfile" -t "$SCHEDULER_REF" "$ctx" >/dev/null ||
    die "podman build of $SCHEDULER_REF failed"
  remove_tree "$ctx"
}

# ------------------------------------------------------------------------------ busybox image
busybox_bin=''
for b in /bin/busybox /usr/bin/busybox; do
  if [[ -x "$b" ]] && is_static "$b"; then
    busybox_bin=$b
    break
  fi
done
[[ -n "$busybox_bin" ]] || die "no static busybox (apt-get install busybox-static, or make deps)"
build_busybox() {
  local d a
  new_tmp_dir
  d=$tmp
  mkdir -p "$d/rootfs/bin" "$d/rootfs/etc" "$d/rootfs/tmp" "$d/rootfs/root" "$d/rootfs/proc" \
    "$d/rootfs/sys" "$d/rootfs/dev" "$d/rootfs/var/run"
  chmod 1777 "$d/rootfs/tmp"
  chmod 0700 "$d/rootfs/root"
  cp "$busybox_bin" "$d/rootfs/bin/busybox"
  while IFS= read -r a; do
    [[ "$a" == bin/busybox || "$a" == linuxrc ]] && continue
    mkdir -p "$d/rootfs/$(dirname "$a")"
    ln -sf /bin/busybox "$d/rootfs/$a"
  done < <("$busybox_bin" --list-full)
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\nnonroot:x:65532:65532:nonroot:/nonexistent:/bin/false\n' >"$d/rootfs/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$d/rootfs/etc/group"
  tar --numeric-owner --owner=0 --group=0 -C "$d/rootfs" -cf "$d/rootfs.tar" .
  # PID 1 sleeps until SIGTERM/SIGINT and then exits 0 at once (a bare `sleep` as PID 1 would
  # ignore SIGTERM and wait for the kill).
  pm "$T_PODMAN" import -q \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/sh", "-c", "trap \"exit 0\" TERM INT; sleep 2147483647 & wait"]' \
    "$d/rootfs.tar" "$BUSYBOX_REF" >/dev/null || die "podman import of $BUSYBOX_REF failed"
  remove_tree "$d"
}

# ---------------------------------------------------------------------------------------- main
wanted() { ((${#only[@]} == 0)) || [[ " ${only[*]} " == *" $1 "* ]]; }
built=() sbom_out=''
if wanted ker-busybox; then
  busybox_fp=$(printf '%s\n' "recipe=$BUSYBOX_RECIPE" "$(sha256sum <"$busybox_bin")" | sha)
  ensure_image ker-busybox "$BUSYBOX_REF" "$busybox_fp" build_busybox
  built+=("$out_dir/ker-busybox.tar")
fi
if wanted kube-extended-resource; then
  resolve_bases
  project_fp=$(project_fingerprint)
  ensure_image "$project_name" "$PROJECT_REF" "$project_fp" build_project "$PROJECT_ALIAS"
  built+=("$out_dir/$project_name.tar")
  export_sbom "$out_dir/$project_name.spdx.json"
  log "$project_name: SBOM (SPDX 2.3, from $SBOM_IN_IMAGE) -> $out_dir/$project_name.spdx.json"
  sbom_out=$out_dir/$project_name.spdx.json
fi
if wanted kube-scheduler; then
  resolve_scheduler
  scheduler_fp=$(printf '%s\n' "recipe=$SCHEDULER_RECIPE" "$SCHEDULER_REF" "$(sha256sum <"$scheduler_bin")" | sha)
  ensure_image kube-scheduler "$SCHEDULER_REF" "$scheduler_fp" build_scheduler
  built+=("$out_dir/kube-scheduler.tar")
fi
log "done in $((SECONDS - t_start))s"
printf '%s\n' "${built[@]}"
[[ -z "$sbom_out" ]] || printf '%s\n' "$sbom_out"
