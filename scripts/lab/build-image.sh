#!/usr/bin/env bash
# Builds one lab image from Debian packages with no registry: mmdebstrap writes a minimal
# bookworm root as a tar, docker import makes it an image. The package source is the machine's
# own apt configuration (its .sources and .list files are handed to mmdebstrap as they are), so
# no mirror is named here. The tag is a hash of the package list and of this script: an
# unchanged lab finds its image and builds nothing.
#
#   scripts/lab/build-image.sh NAME PACKAGE...    prints the image's tag
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 NAME PACKAGE..." >&2; exit 2; }
name=$1; shift
packages=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
hash=$( { printf '%s\n' "$packages"; cat "$0"; } | sha256sum | cut -c1-12)
tag="shmdoctor-lab/$name:$hash"

if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "$tag"
  exit 0
fi

sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] && grep -qE '^[[:space:]]*(deb|Types:)' "$f" && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || { echo "$0: no apt source configured on this machine" >&2; exit 1; }

echo "building $tag from Debian packages: $packages" >&2
start=$(date +%s)
mmdebstrap --quiet --variant=minbase --include="$packages" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --aptopt='Acquire::Retries "3"' \
    bookworm - "${sources[@]}" |
  docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' - "$tag" >/dev/null
echo "built $tag in $(( $(date +%s) - start ))s, $(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MiB", $1/1048576}')" >&2
echo "$tag"
