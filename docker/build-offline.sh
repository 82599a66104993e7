#!/usr/bin/env bash
# Build the lockchaos node image without a container registry: a Debian root filesystem made
# by mmdebstrap (from Debian's package mirror) is piped into `docker import`.
#   usage: docker/build-offline.sh [IMAGE]          (default lockchaos-node:bookworm)
#   env:   MIRROR      Debian mirror (default: mmdebstrap's, deb.debian.org)
#          SUITE       default bookworm (the worker binary needs glibc >= the host's)
# Equivalent to docker/Dockerfile; keep the two in step (the inputs hash covers both).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
image=${1:-lockchaos-node:bookworm}
suite=${SUITE:-bookworm}

fail() { echo "build-offline.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || fail "$1 is missing; install it with: apt-get install $2"; }
# On a fresh Debian machine as root, fetch mmdebstrap from Debian's packages rather than stop:
# the README promises that the first `lockchaos scenario` does all the set-up.
if ! command -v mmdebstrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "mmdebstrap is missing: installing it with apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null \
    || fail "could not install mmdebstrap with apt-get; install it by hand: apt-get install mmdebstrap"
fi
need mmdebstrap mmdebstrap
need gcc gcc
need docker docker.io
docker info >/dev/null 2>&1 || fail "the Docker daemon does not answer (docker info failed)"

# The label the harness compares to decide whether the image is up to date (node_image.rs
# computes the same: sha256 of these four files concatenated in this order).
inputs=$(cat "$here/build-offline.sh" "$here/Dockerfile" "$here/jemalloc-stub.c" "$here/packages.txt" | sha256sum | cut -d' ' -f1)
packages=$(grep -v '^\s*\(#.*\)\?$' "$here/packages.txt" | paste -sd, -)

work=$(mktemp -d)
# Import under a temporary name and tag only after the whole pipeline succeeded: a failed
# mmdebstrap must not leave a half-built image carrying the up-to-date label.
tmp_ref="lockchaos-node-partial:$$"
trap 'rm -rf "$work"; docker rmi "$tmp_ref" >/dev/null 2>&1 || true' EXIT

echo "compiling the jemalloc stand-in with $(gcc -dumpfullversion)"
gcc -shared -fPIC -O2 -Wall -Wl,-soname,libjemalloc.so.2 -o "$work/libjemalloc.so.2" "$here/jemalloc-stub.c"

echo "building $image ($suite: $packages), inputs $inputs"
start=$(date +%s)
# Recommends are off by default in mmdebstrap (as --no-install-recommends in the Dockerfile);
# apt lists and caches are removed by its default cleanup step. Left out to keep the image
# small: docs, man pages, translations, and LLVM/z3 (~160 MB), which postgresql-15 depends on
# only for JIT; without llvmjit.so PostgreSQL silently runs with JIT unavailable. With man pages
# left out, /usr/share/man/man1 must still exist: OpenJDK's postinst (ZooKeeper's JRE) links
# java.1.gz there through update-alternatives and fails without the directory.
# docker import accepts a truncated stream, so judge each side by PIPESTATUS.
set +e
# shellcheck disable=SC2016  # $1 in hooks is expanded by mmdebstrap (the rootfs path)
mmdebstrap --variant=minbase --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/lib/*/libLLVM-*' --dpkgopt='path-exclude=/usr/lib/*/libz3.so.*' \
  --dpkgopt='path-exclude=/usr/lib/postgresql/*/lib/llvmjit*' \
  --dpkgopt='path-exclude=/usr/lib/postgresql/*/lib/bitcode/*' \
  --essential-hook='mkdir -p "$1/usr/share/man/man1"' \
  --customize-hook='mkdir -p "$1/opt/lockchaos/jemalloc-stub"' \
  --customize-hook="upload $work/libjemalloc.so.2 /opt/lockchaos/jemalloc-stub/libjemalloc.so.2" \
  --customize-hook='chmod 0644 "$1/opt/lockchaos/jemalloc-stub/libjemalloc.so.2"' \
  --customize-hook='cd "$1" && f=$(ls usr/lib/*/faketime/libfaketime.so.1) && ln -s "/$f" opt/lockchaos/libfaketime.so.1' \
  "$suite" - ${MIRROR:+"$MIRROR"} \
| docker import \
  --change "LABEL lockchaos.image.inputs=$inputs" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LOCKCHAOS_LIBFAKETIME=/opt/lockchaos/libfaketime.so.1' \
  --change 'ENV LOCKCHAOS_JEMALLOC_STUB_DIR=/opt/lockchaos/jemalloc-stub' \
  --change 'CMD ["bash"]' \
  - "$tmp_ref"
st=("${PIPESTATUS[@]}")
set -e
[ "${st[0]}" = 0 ] || fail "mmdebstrap failed (exit ${st[0]}); is Debian's mirror reachable? see its E: lines"
[ "${st[1]}" = 0 ] || fail "docker import failed (exit ${st[1]})"
docker tag "$tmp_ref" "$image"
echo "built $image in $(( $(date +%s) - start )) s"
