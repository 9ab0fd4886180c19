#!/usr/bin/env bash
# Build the controller image from ./Dockerfile with podman (or buildah), on any machine.
#
# usage: hack/image.sh tools     install podman & co. when missing, configure them (idempotent)
#        hack/image.sh base      print the base image to build on (made from Debian packages if needed)
#        hack/image.sh build     tools + base + build (then prunes its own untagged images, by the
#                                Dockerfile's label); prints the image name on its last line
# env:   IMAGE (default localhost/arc-controllers-python:dev), VERSION (default dev),
#        PYTHON_IMAGE (a base to use as it is; default: python:3.11-slim-bookworm when a registry
#          serves it, else the Debian-packaged base below),
#        ARC_IMAGE_CACHE (default ~/.cache/reconcilekit/image), DEBIAN_MIRROR (default deb.debian.org).
#
# Without a registry the base is bookworm made by mmdebstrap from Debian's packages (python3,
# python3-venv, python-is-python3, ca-certificates: Python 3.11 like the public image), imported
# with `podman import`. The tarball is cached per package list like the envtest binaries, so only
# the first run pays for it (about 3 minutes); later runs import it, or find the image in place.
#
# Facts about the CI machines this copes with (measured): crun fails there ("cgroups in hybrid mode
# not supported"), so podman runs runc; podman's default ulimits fail (setrlimit RLIMIT_NOFILE) until
# containers.conf says `default_ulimits = []`; builds need --isolation=chroot; pip inside the build
# needs the host's CA bundle and pip settings, mounted read-only (harmless where they are defaults).
set -euo pipefail

IMAGE="${IMAGE:-localhost/arc-controllers-python:dev}"
VERSION="${VERSION:-dev}"
PUBLIC_BASE="docker.io/library/python:3.11-slim-bookworm"
CACHE="${ARC_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcilekit/image}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE_PACKAGES="python3,python3-venv,python-is-python3,ca-certificates"
TOOLS=(podman buildah mmdebstrap runc uidmap slirp4netns fuse-overlayfs)
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

say() { printf 'image: %s\n' "$*" >&2; }
die() { printf 'image: error: %s\n' "$*" >&2; exit 1; }

tools() {
  local missing=() p
  for p in "${TOOLS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
    [[ $(id -u) == 0 ]] || die "missing ${missing[*]}: run as root, or install them"
    say "installing ${missing[*]} (about a minute)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } \
      || die "apt-get could not install ${missing[*]}"
  fi
  local conf=/etc/containers/containers.conf
  if [[ $(id -u) == 0 ]] && ! grep -qs '^default_ulimits *= *\[ *\]' "$conf"; then
    say "setting default_ulimits = [] in $conf"
    mkdir -p /etc/containers
    if grep -qs '^\[containers\]' "$conf"; then
      sed -i 's/^\[containers\]/[containers]\ndefault_ulimits = []/' "$conf"
    else
      printf '[containers]\ndefault_ulimits = []\n' >>"$conf"
    fi
  fi
}

have_image() { podman image exists "$1" 2>/dev/null; }

debian_base() {
  local tag key tar
  key="$(printf '%s %s' "$BASE_PACKAGES" "$MIRROR" | sha256sum | cut -c1-12)"
  tag="localhost/arc-python-base:bookworm-$key"
  tar="$CACHE/bookworm-python3-$key.tar"
  if have_image "$tag"; then echo "$tag"; return; fi
  if [[ ! -s "$tar" ]]; then
    say "making the bookworm base from Debian packages into $tar (about 3 minutes)"
    mkdir -p "$CACHE"
    mmdebstrap --quiet --format=tar --variant=minbase --include="$BASE_PACKAGES" \
      --aptopt='Acquire::Check-Valid-Until "false"' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' \
      bookworm "$tar.tmp" "$MIRROR" >&2 || { rm -f "$tar.tmp"; die "mmdebstrap failed"; }
    mv "$tar.tmp" "$tar"
  fi
  say "importing $tar as $tag"
  podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' "$tar" "$tag" >/dev/null
  echo "$tag"
}

base() {
  if [[ -n "${PYTHON_IMAGE:-}" ]]; then echo "$PYTHON_IMAGE"; return; fi
  if have_image "$PUBLIC_BASE"; then echo "$PUBLIC_BASE"; return; fi
  if timeout 60 podman pull --quiet "$PUBLIC_BASE" >/dev/null 2>&1; then echo "$PUBLIC_BASE"; return; fi
  say "no registry serves $PUBLIC_BASE: using a base made from Debian packages"
  debian_base
}

build() {
  local from mounts=()
  from="$(base | tail -n 1)"
  # Only what the host has: pip in the build then trusts the same CAs and uses the same index.
  [[ -d /etc/ssl/certs ]] && mounts+=(--volume /etc/ssl/certs:/etc/ssl/certs:ro)
  [[ -f /etc/pip.conf ]] && mounts+=(--volume /etc/pip.conf:/etc/pip.conf:ro)
  say "building $IMAGE on $from"
  podman --runtime runc build --quiet --isolation=chroot --network=host "${mounts[@]}" \
    --build-arg PYTHON_IMAGE="$from" --build-arg VERSION="$VERSION" \
    --build-arg COMMIT_SHA="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo dev)" \
    --tag "$IMAGE" --file "$ROOT/Dockerfile" "$ROOT" >&2
  # Each build leaves untagged images: its build stage, and the previous image under $IMAGE.
  # Only those carrying the Dockerfile's label go: other images on the machine stay.
  podman image prune --force --filter label=arc-controllers-python.image >/dev/null \
    || say "could not prune this build's untagged images (podman image prune)"
  echo "$IMAGE"
}

case "${1:-build}" in
  tools) tools ;;
  base) tools; base ;;
  build) tools; build ;;
  *) die "unknown command ${1} (tools | base | build)" ;;
esac
