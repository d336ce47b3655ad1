#!/usr/bin/env bash
# pin-artifacts.sh [PLAN]: fills the artifact manifest k8sapi ships
# (internal/artifacts/artifact-pins.sha256) with the SHA-256 upstream publishes
# beside every file nodes download for the default versions, on every
# architecture. Run it where there is network, read the diff, commit it:
# clusters are then founded without the published-digest fallback.
#
# The files, their URLs and where their digests are published come from
# k8sapi's table of artifact files (go run ./cmd/k8sapi-artifacts prints
# it, one "<name> <url> <digest url> <entry or ->" line each); PLAN names a
# file of such lines instead. DOWNLOAD=1 also downloads every file (hundreds
# of megabytes) and refuses a digest the file does not have. The manifest's
# comment lines are kept; PIN_MANIFEST names another manifest to write.
set -euo pipefail
shopt -s inherit_errexit # a failure inside $(...) fails the caller too

cd "$(dirname "${BASH_SOURCE[0]}")/.."
manifest="${PIN_MANIFEST:-internal/artifacts/artifact-pins.sha256}"

die() { printf 'pin-artifacts: %s\n' "$*" >&2; exit 1; }

# published DIGEST_URL ENTRY: the digest published at DIGEST_URL: the bare
# one (ENTRY "-"), or ENTRY's among "<digest>  <file>" lines.
published() {
  curl -fsSL --retry 3 "$1" | awk -v f="$2" '
    f == "-" && NF == 1 && !found { print tolower($1); found = 1 }
    NF >= 2 { name = $2; sub(/^\*/, "", name); if (name == f && !found) { print tolower($1); found = 1 } }'
}

# checked NAME URL DIGEST: DIGEST, once the file at URL is seen to have it.
checked() {
  local got
  got="$(curl -fsSL --retry 3 "$2" | sha256sum | awk '{ print $1 }')"
  [[ "$got" == "$3" ]] || die "${1}: ${2} has SHA-256 ${got}, but ${3} is published for it"
  printf '%s' "$3"
}

# pins reads the plan and prints one manifest line per file, sorted.
pins() {
  local name url sums entry digest
  while read -r name url sums entry; do
    [[ -n "$name" ]] || continue
    digest="$(published "$sums" "$entry")" || die "${name}: cannot fetch ${sums}"
    [[ "$digest" =~ ^[0-9a-f]{64}$ ]] || die "${name}: no SHA-256 for ${entry} at ${sums}"
    if [[ "${DOWNLOAD:-0}" == "1" ]]; then
      digest="$(checked "$name" "$url" "$digest")"
    fi
    printf '%s  %s\n' "$digest" "$name"
    printf 'pinned %s\n' "$name" >&2
  done | sort -k2
}

main() {
  local plan lines tmp
  if [[ $# -gt 0 ]]; then
    plan="$(cat "$1")"
  else
    plan="$(go run ./cmd/k8sapi-artifacts)"
  fi
  lines="$(pins <<<"$plan")"
  tmp="$(mktemp "${manifest}.XXXXXX")"
  { grep '^#' "$manifest" || true; printf '%s\n' "$lines"; } >"$tmp"
  chmod 0644 "$tmp"
  mv "$tmp" "$manifest"
  printf 'pin-artifacts: wrote %s pins to %s\n' "$(wc -l <<<"$lines")" "$manifest" >&2
}

main "$@"
