#!/usr/bin/env bash
# dev-prerequisites.sh TARGET: makes this machine ready for `make TARGET`
# (local or test), so the README's two commands are the whole set-up.
# Debian packages it lacks are installed (as root, or with passwordless
# sudo); what apt cannot give (Go, the pip-installed moto_server, cfn-lint,
# openapi-spec-validator) is named with how to get it, and the target stops.
# Runs unattended (no prompt), so CI and a developer take the same path.
set -euo pipefail

target="${1:?usage: dev-prerequisites.sh local|test}"

# The one list: command, the Debian package that provides it, and the
# targets that need it ("both": local and test). The e2e proofs (run by
# make test) build network namespaces, a Debian root filesystem and
# systemd machines, and compile runc with cgo and seccomp and the test
# images' busybox (static).
APT_TOOLS=(
  "psql postgresql-client both"
  "curl curl both"
  "jq jq both"
  "file file test"
  "shellcheck shellcheck test"
  "ip iproute2 test"
  "debootstrap debootstrap test"
  "systemd-nspawn systemd-container test"
  "gcc gcc test"
  "bzip2 bzip2 test"
  "/usr/include/stdio.h libc6-dev test"
  "/usr/include/seccomp.h libseccomp-dev test"
)

# Not from apt on these machines: command and how to install it.
OTHER_TOOLS=(
  "go both install Go 1.26+ from https://go.dev/dl"
  "moto_server both pip install 'moto[server]'"
  "cfn-lint test pip install cfn-lint"
  "openapi-spec-validator test pip install openapi-spec-validator"
)

log() { printf 'prerequisites: %s\n' "$*" >&2; }

# needed FOR: whether a row marked FOR applies to this target.
needed() { [[ "$1" == both || "$1" == "$target" ]]; }

# present TOOL: a command on PATH, or a file when TOOL is a path.
present() {
  if [[ "$1" == /* ]]; then [[ -e "$1" ]]; else command -v "$1" >/dev/null; fi
}

# postgres_needed: a server is needed only when none answers and no
# DATABASE_URL names one; then the harness starts its own from the binaries.
postgres_needed() {
  [[ -z "${DATABASE_URL:-}" ]] || return 1
  { command -v pg_isready >/dev/null && pg_isready -q -h 127.0.0.1 -p 5432; } && return 1
  ! command -v initdb >/dev/null && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

missing_packages() {
  local row tool pkg for
  for row in "${APT_TOOLS[@]}"; do
    read -r tool pkg for <<<"$row"
    needed "$for" && ! present "$tool" && printf '%s\n' "$pkg"
  done
  if postgres_needed; then printf 'postgresql\n'; fi
}

apt_install() {
  local sudo=()
  if (($(id -u) != 0)); then
    sudo -n true 2>/dev/null || { log "missing Debian packages: $*; run: sudo apt-get install $*"; return 1; }
    sudo=(sudo -n)
  fi
  log "installing $*"
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -q </dev/null
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "$@" </dev/null
}

check_others() {
  local row tool for hint ok=0
  for row in "${OTHER_TOOLS[@]}"; do
    read -r tool for hint <<<"$row"
    needed "$for" && ! present "$tool" && { log "missing: ${tool}; install it with: ${hint}"; ok=1; }
  done
  return "$ok"
}

mapfile -t packages < <(missing_packages)
if ((${#packages[@]})); then
  apt_install "${packages[@]}"
fi
check_others
