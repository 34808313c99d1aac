#!/bin/sh
# onboarding.sh: can this machine run our stack? Checks that Docker is installed and running,
# then asks shmdoctor whether a container here can get the /dev/shm the stack needs, and says
# what to do when it cannot. Copy it into your repository and set the default size below to
# what your largest service needs (its shm_size).
#
# Usage: onboarding.sh [SIZE]    SIZE such as 8g; default $SHM_NEED, else 8g
# Exit status: 0 ready, 1 this machine cannot give SIZE of /dev/shm, 2 something to install,
# start or fix first.
set -u

need=${1:-${SHM_NEED:-8g}}

if ! command -v docker >/dev/null 2>&1; then
  echo "Docker is not installed: get Docker Desktop or Docker Engine, https://docs.docker.com/get-docker/" >&2
  exit 2
fi
if ! command -v shmdoctor >/dev/null 2>&1; then
  echo "shmdoctor is not installed: go install github.com/shmdoctor/shmdoctor/cmd/shmdoctor@latest" >&2
  exit 2
fi
if ! docker info >/dev/null 2>&1; then
  echo "Docker is installed but its engine does not answer: start Docker Desktop, or 'sudo systemctl start docker' on Linux; 'docker context ls' shows which engine is used." >&2
  exit 2
fi

shmdoctor host --need "$need"
status=$?
case $status in
0)
  echo "ready: a container on this machine can get $need of /dev/shm"
  ;;
1)
  cat >&2 <<MSG
This machine cannot give a container $need of /dev/shm (the "need" line above says why).
- Docker Desktop: raise the memory in Settings > Resources, apply, and run this again.
- Linux: the host has too little memory for it; free some, or use a larger machine.
MSG
  ;;
*)
  echo "shmdoctor could not measure this machine (exit $status, see above)" >&2
  status=2
  ;;
esac
exit "$status"
