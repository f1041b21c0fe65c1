#!/usr/bin/env bash
# make image-test's set-up (docs/containers.md, "Testing the image"): podman and its tools from
# Debian's packages when missing, and the base image the Containerfile names,
# debian:bookworm-slim, made locally with debootstrap when podman has none: the tests pull
# nothing from a registry. Kept once made; `podman rmi debian:bookworm-slim` makes it anew.
set -euo pipefail

BASE=localhost/debian:bookworm-slim

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "make image-test runs podman as root: run it as root, or install sudo." >&2
    exit 1
  fi
fi

missing=()
for tool in podman buildah runc podman-compose debootstrap; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing ${missing[*]} from Debian's packages"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

if $sudo podman image exists "$BASE"; then
  exit 0
fi

# The mirror this machine's apt uses, so that the base image's packages come from where the
# host's do (and its sources file, copied in, is what its builds' apt-get reads).
sources=/etc/apt/sources.list.d/debian.sources
mirror=""
if [ -f "$sources" ]; then
  mirror=$(awk '/^URIs:/ { print $2; exit }' "$sources")
fi
mirror=${mirror:-http://deb.debian.org/debian}

rootfs=$(mktemp -d /var/tmp/podsync-rootfs.XXXXXX)
trap '$sudo rm -rf "$rootfs"' EXIT
echo "Making $BASE with debootstrap from $mirror (a few minutes, once)"
$sudo debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
  tail -20 "$rootfs.log" >&2
  exit 1
}
rm -f "$rootfs.log"
if [ -f "$sources" ]; then
  $sudo cp "$sources" "$rootfs/etc/apt/sources.list.d/"
  $sudo rm -f "$rootfs/etc/apt/sources.list"
fi
# As the official -slim image: dpkg leaves out manuals, documentation and translations, apt
# keeps no downloaded package after an install, and neither those nor package lists stay behind.
$sudo tee "$rootfs/etc/apt/apt.conf.d/docker-clean" >/dev/null <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
echo 'Acquire::Languages "none";' | $sudo tee "$rootfs/etc/apt/apt.conf.d/docker-no-languages" >/dev/null
$sudo tee "$rootfs/etc/dpkg/dpkg.cfg.d/slim" >/dev/null <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF
$sudo find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
$sudo rm -rf "$rootfs"/usr/share/{man,groff,info,locale,lintian}/* \
  "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin \
  "$rootfs"/var/lib/apt/lists/*
$sudo tar -C "$rootfs" -c . | $sudo podman import --quiet --change 'CMD ["bash"]' - "$BASE" >/dev/null
echo "Made $BASE"
