#!/usr/bin/env bash
# Builds the CPU image (cluster/container/Dockerfile.cpu) with podman and checks the weft inside
# it generates the same greedy text as the weft built here.
#   scripts/container-build-test.sh WEFT      (WEFT: this tree's build/launcher/weft)
# Where no container registry answers (this project's machines reach only Debian's and PyPI's
# package servers), the Debian 12 base is made with debootstrap from Debian's archive and
# imported, once, as localhost/weft-debian:12. Storage is vfs and RUN steps are isolated by
# chroot, which is what works inside an unprivileged container. `podman run` does not work there
# (crun cannot set RLIMIT_NOFILE), so the check runs weft in a last build step instead.
# Takes as long as a full build of weft (tens of minutes on 2 cores): not part of ctest.
set -euo pipefail
weft=$(readlink -f "$1")
cd "$(dirname "$0")/.."
command -v podman >/dev/null || { echo "SKIP: podman is not installed (apt-get install podman)"; exit 77; }
podman=(podman --storage-driver vfs)
base=localhost/weft-debian:12
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! "${podman[@]}" image exists "$base"; then
  command -v debootstrap >/dev/null || { echo "SKIP: no debootstrap to make the base image"; exit 77; }
  debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log"
  # This machine's certificate authorities (its HTTPS may pass a proxy with a CA of its own), so
  # that install-deps.sh's downloads verify inside the build as they do here; installing
  # ca-certificates in the image adds them to its bundle.
  mkdir -p "$work/rootfs/usr/local/share/ca-certificates"
  cp /etc/ssl/certs/ca-certificates.crt "$work/rootfs/usr/local/share/ca-certificates/build-host.crt"
  tar -C "$work/rootfs" -c . | "${podman[@]}" import - "$base"
fi
start=$(date +%s)
"${podman[@]}" build --isolation chroot --network host --build-arg BASE_IMAGE="$base" \
  -f cluster/container/Dockerfile.cpu -t localhost/weft-cpu:test .
echo "image built in $(( $(date +%s) - start )) s"
args=(generate --prompt "And God said" --max-tokens 16 --temperature 0 --threads 1)
cat >"$work/Containerfile" <<EOT
FROM localhost/weft-cpu:test
RUN weft ${args[*]@Q} > /tmp/generated.txt && cat /tmp/generated.txt
EOT
inside=$("${podman[@]}" build --isolation chroot --network host -f "$work/Containerfile" "$work" 2>&1 |
  sed -n '/^STEP 2\/2/,/^COMMIT/p' | sed '1d;$d')
here=$("$weft" "${args[@]}" --model configs/default-model)
[ -n "$here" ] || { echo "FAIL: weft generated nothing here"; exit 1; }
[ "$inside" == "$here" ] || { echo "FAIL: the image's weft wrote '$inside', this tree's '$here'"; exit 1; }
echo "PASS: the image's weft generates the same text: $here"
