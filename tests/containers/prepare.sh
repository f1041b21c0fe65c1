#!/usr/bin/env bash
# make image-test's set-up (docs/containers.md, "Testing the image"): podman and its tools from
# Debian's packages when missing, and the base image the Containerfile names,
# debian:bookworm-slim, made locally with debootstrap when podman has none: the tests pull
# nothing from a registry. The arm64 build (tests/containers/test_arm64.py) needs the same base
# for arm64, made the same way, and qemu's user-mode emulator registered with the kernel
# (binfmt_misc), through which an arm64 program runs here. Kept once made;
# `podman rmi debian:bookworm-slim debian:bookworm-slim-arm64` makes them anew.
set -euo pipefail

BASE=localhost/debian:bookworm-slim
BASE_ARM64=localhost/debian:bookworm-slim-arm64

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "make image-test runs podman as root: run it as root, or install sudo." >&2
    exit 1
  fi
fi

missing=()
for tool in podman buildah runc podman-compose debootstrap qemu-aarch64-static update-binfmts; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  packages=()
  for tool in "${missing[@]}"; do
    case "$tool" in
      qemu-aarch64-static) packages+=(qemu-user-static) ;;
      update-binfmts) packages+=(binfmt-support) ;;
      *) packages+=("$tool") ;;
    esac
  done
  echo "Installing ${packages[*]} from Debian's packages"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}"
fi

# qemu-user-static registers its emulators with the F flag (the kernel opens the emulator once,
# so that it runs inside a container's root too), but only where binfmt_misc is mounted: a
# machine without systemd's automount has it unmounted.
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
  $sudo mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  $sudo update-binfmts --enable qemu-aarch64
fi

# The mirror this machine's apt uses, so that the base image's packages come from where the
# host's do (and its sources file, copied in, is what its builds' apt-get reads).
sources=/etc/apt/sources.list.d/debian.sources
mirror=""
if [ -f "$sources" ]; then
  mirror=$(awk '/^URIs:/ { print $2; exit }' "$sources")
fi
mirror=${mirror:-http://deb.debian.org/debian}

# make_base ARCH TAG: Debian bookworm's minimal system for ARCH, slimmed as the official -slim
# image is, imported as TAG. A foreign ARCH runs its packages' scripts through qemu.
make_base() {
  local arch=$1 tag=$2 rootfs
  rootfs=$(mktemp -d /var/tmp/podsync-rootfs.XXXXXX)
  # shellcheck disable=SC2064 # the folder of this call, expanded now
  trap "$sudo rm -rf '$rootfs' '$rootfs.log'; trap - RETURN" RETURN
  echo "Making $tag with debootstrap from $mirror (a few minutes, once)"
  $sudo debootstrap --arch="$arch" --variant=minbase bookworm "$rootfs" "$mirror" \
    >"$rootfs.log" 2>&1 || {
    tail -20 "$rootfs.log" >&2
    return 1
  }
  if [ -f "$sources" ]; then
    $sudo cp "$sources" "$rootfs/etc/apt/sources.list.d/"
    $sudo rm -f "$rootfs/etc/apt/sources.list"
  fi
  # As the official -slim image: dpkg leaves out manuals, documentation and translations, apt
  # keeps no downloaded package after an install, and neither those nor package lists stay
  # behind.
  $sudo tee "$rootfs/etc/apt/apt.conf.d/docker-clean" >/dev/null <<'CONF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CONF
  echo 'Acquire::Languages "none";' | $sudo tee "$rootfs/etc/apt/apt.conf.d/docker-no-languages" >/dev/null
  $sudo tee "$rootfs/etc/dpkg/dpkg.cfg.d/slim" >/dev/null <<'CONF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
CONF
  $sudo find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  $sudo rm -rf "$rootfs"/usr/share/{man,groff,info,locale,lintian}/* \
    "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin \
    "$rootfs"/var/lib/apt/lists/*
  $sudo tar -C "$rootfs" -c . | $sudo podman import --quiet --os linux --arch "$arch" \
    --change 'CMD ["bash"]' - "$tag" >/dev/null
  echo "Made $tag"
}

# The base of the image podman builds by default is this machine's own architecture's.
$sudo podman image exists "$BASE" || make_base "$(dpkg --print-architecture)" "$BASE"
$sudo podman image exists "$BASE_ARM64" || make_base arm64 "$BASE_ARM64"
