#!/usr/bin/env bash
# Installs the libraries the reference clients need that Debian does not package, pinned, into
# clients/vendor/NAME-VERSION (ignored by git; clients/ is mounted read-only into the clients'
# containers, whose Debian python3 finds them there through the client's own sys.path entry).
# Idempotent: a library already in place is left alone. Run from anywhere; needs PyPI.
#
#   sherlock 0.4.0 (clients/sherlock_lock.py): pure Python, installed with --no-deps (its redis
#   extra is the node image's python3-redis 4.3.4).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p vendor

# Scratch folders, removed however the script ends.
scratch=()
trap 'rm -rf "${scratch[@]}"' EXIT

# pip: this python3's, or else one in a throw-away virtualenv (a python3 without pip).
pip=(python3 -m pip)
if ! python3 -m pip --version >/dev/null 2>&1; then
  venv=$(mktemp -d)
  scratch+=("$venv")
  python3 -m venv "$venv" || { echo "install_vendor.sh: python3 has no pip and cannot make a virtualenv (apt-get install python3-venv)" >&2; exit 1; }
  pip=("$venv/bin/python" -m pip)
fi

# install NAME VERSION SHA256: the wheel from PyPI, checked against its hash.
install() {
  local name=$1 version=$2 sha=$3 dir="vendor/$1-$2"
  if [[ -f "$dir/.installed" ]]; then
    echo "$name $version: already in clients/$dir"
    return
  fi
  local tmp
  tmp=$(mktemp -d vendor/.tmp.XXXXXX)
  scratch+=("$tmp")
  echo "$name==$version --hash=sha256:$sha" >"$tmp/requirements.txt"
  "${pip[@]}" install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --no-compile --only-binary :all: \
    --require-hashes --target "$tmp/lib" -r "$tmp/requirements.txt"
  # The clients run as nobody: everything readable.
  chmod -R a+rX "$tmp/lib"
  touch "$tmp/lib/.installed"
  rm -rf "$dir"
  mv "$tmp/lib" "$dir"
  echo "$name $version: installed in clients/$dir"
}

install sherlock 0.4.0 660efdd114ca786e8765ae966dcce70ebba5509eccd6a9186648048e6acbceea
