#!/usr/bin/env bash
# Build the Python sandbox image without any registry: a Debian minbase root
# filesystem from Debian's packages (debootstrap), a non-root user and an
# empty /workspace, imported into podman as one layer.
#
# Usage: assay sandbox build-image [--force] [--no-cache]
#   (from a source checkout also: scripts/build-sandbox-image.sh [--force] [--no-cache])
#   --force     rebuild and re-import even when the image already exists
#   --no-cache  ignore the cached root filesystem tarball (debootstrap again)
#
# Environment (all optional):
#   ASSAY_SANDBOX_IMAGE      image name   (localhost/assay-sandbox-python:bookworm)
#   ASSAY_SANDBOX_SUITE      Debian suite (bookworm)
#   ASSAY_SANDBOX_MIRROR     Debian mirror (http://deb.debian.org/debian)
#   ASSAY_SANDBOX_PACKAGES   extra Debian packages, comma separated
#   ASSAY_SANDBOX_UID        the sandbox user's uid and gid (10001)
#   ASSAY_CACHE_DIR          where the rootfs tarball and .debs are kept
#                            (/var/cache/assay as root, else ~/.cache/assay)
#
# Must run as root (debootstrap needs it). Idempotent: an existing image is
# left alone unless --force; a cached rootfs tarball for the same inputs skips
# debootstrap entirely, so CI reruns take seconds.
set -euo pipefail

# Everything runs inside main(), which bash parses whole before running, so
# editing this file while a build runs cannot change what that build does.
main() {
  force=0
  use_cache=1
  for arg in "$@"; do
    case "$arg" in
      --force) force=1 ;;
      --no-cache) use_cache=0 ;;
      -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
      *) echo "build-sandbox-image: unknown argument: $arg" >&2; exit 2 ;;
    esac
  done

  image="${ASSAY_SANDBOX_IMAGE:-localhost/assay-sandbox-python:bookworm}"
  suite="${ASSAY_SANDBOX_SUITE:-bookworm}"
  mirror="${ASSAY_SANDBOX_MIRROR:-http://deb.debian.org/debian}"
  uid="${ASSAY_SANDBOX_UID:-10001}"
  # python3-openpyxl, -xlrd, -odf: load_file("name") reads a registered workbook (.xlsx, .xls, .ods)
  # the way the files datasource does (docs/files.md). Debian has no
  # pyarrow: a Parquet file is read with sql_query, not in the sandbox.
  packages="python3,python3-numpy,python3-pandas,python3-matplotlib,python3-scipy,python3-tabulate,python3-cloudpickle,python3-openpyxl,python3-xlrd,python3-odf,fonts-dejavu-core"
  if [ -n "${ASSAY_SANDBOX_PACKAGES:-}" ]; then
    packages="$packages,${ASSAY_SANDBOX_PACKAGES}"
  fi
  if [ "$(id -u)" = 0 ]; then
    cache_dir="${ASSAY_CACHE_DIR:-/var/cache/assay}"
  else
    cache_dir="${ASSAY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/assay}"
  fi

  log() { echo "build-sandbox-image: $*" >&2; }

  for bin in podman tar sha256sum; do
    command -v "$bin" >/dev/null 2>&1 || { log "$bin is required"; exit 1; }
  done

  # The cache key covers every input that changes the root filesystem,
  # including this script's own post-processing steps.
  recipe_version=2
  key="$(printf '%s\n' "$recipe_version" "$suite" "$mirror" "$packages" "$uid" \
    | sha256sum | cut -c1-16)"

  # An image of the same recipe is kept; one built from another recipe (an
  # older package list, say) is rebuilt, so a changed recipe reaches CI too.
  if [ "$force" = 0 ] && podman image exists "$image"; then
    built="$(podman image inspect --format '{{index .Labels "io.assay.sandbox.recipe"}}' "$image" 2>/dev/null || true)"
    if [ "$built" = "$key" ]; then
      log "$image already exists (use --force to rebuild)"
      exit 0
    fi
    log "$image was built from another recipe (${built:-none}, now $key): rebuilding"
  fi
  tarball="$cache_dir/sandbox-rootfs-$suite-$key.tar"
  mkdir -p "$cache_dir/debs"

  workdir=""
  cleanup() {
    set +e
    if [ -n "$workdir" ] && [ -d "$workdir" ]; then
      # debootstrap mounts /proc, /sys (and sometimes /dev) inside the target;
      # unmount before removing so nothing of the host is ever deleted.
      # (|| true: with pipefail, "no mounts found" must not abort the clean-up.)
      if command -v findmnt >/dev/null 2>&1; then
        { findmnt -rn -o TARGET | grep -F "$workdir/" | sort -r \
          | while read -r m; do umount -l "$m" 2>/dev/null || true; done; } || true
      fi
      rm -rf --one-file-system "$workdir" || true
    fi
  }
  trap cleanup EXIT INT TERM

  if [ "$use_cache" = 0 ] || [ ! -s "$tarball" ]; then
    [ "$(id -u)" = 0 ] || { log "debootstrap needs root; run as root"; exit 1; }
    command -v debootstrap >/dev/null 2>&1 || { log "debootstrap is required"; exit 1; }
    workdir="$(mktemp -d "${TMPDIR:-/var/tmp}/assay-sandbox-image.XXXXXX")"
    rootfs="$workdir/rootfs"
    log "debootstrap $suite (minbase + $packages) from $mirror"
    debootstrap --variant=minbase --cache-dir="$cache_dir/debs" \
      --include="$packages" "$suite" "$rootfs" "$mirror" >"$workdir/debootstrap.log" 2>&1 || {
        tail -n 40 "$workdir/debootstrap.log" >&2
        log "debootstrap failed"
        exit 1
      }

    # The unprivileged user the sandbox runs as, written directly so the
    # image needs no useradd at build time.
    echo "sandbox:x:$uid:$uid:assay sandbox:/workspace:/bin/sh" >>"$rootfs/etc/passwd"
    echo "sandbox:x:$uid:" >>"$rootfs/etc/group"
    echo "sandbox:!:19000:0:99999:7:::" >>"$rootfs/etc/shadow"
    # Sticky and world-writable like /tmp: engines copy this directory's mode
    # onto the tmpfs mounted over it, and sandboxes run code as other uids.
    install -d -m 1777 -o 0 -g 0 "$rootfs/workspace"

    # Nothing in the image needs apt's state or documentation at run time.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
      "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
      "$rootfs"/usr/share/locale/* \
      "$rootfs"/var/log/*.log "$rootfs"/tmp/* "$rootfs"/var/tmp/*
    # Leftover mount points debootstrap may have used must be empty in the tar.
    for d in proc sys dev/pts; do
      if mountpoint -q "$rootfs/$d" 2>/dev/null; then umount -l "$rootfs/$d"; fi
    done

    log "caching root filesystem as $tarball"
    tar --numeric-owner --xattrs -C "$rootfs" -cf "$tarball.partial" .
    mv -f "$tarball.partial" "$tarball"
    # Older tarballs of other recipes are dead weight.
    find "$cache_dir" -maxdepth 1 -name "sandbox-rootfs-*.tar" ! -path "$tarball" -delete
  else
    log "using cached root filesystem $tarball"
  fi

  log "importing as $image"
  podman import \
    --change "USER $uid:$uid" \
    --change "WORKDIR /workspace" \
    --change "ENV HOME=/workspace" \
    --change "ENV LANG=C.UTF-8" \
    --change "ENV PYTHONDONTWRITEBYTECODE=1" \
    --change "ENV PYTHONUNBUFFERED=1" \
    --change "ENV MPLBACKEND=Agg" \
    --change "ENV MPLCONFIGDIR=/tmp/matplotlib" \
    --change "ENV OMP_NUM_THREADS=1" \
    --change "ENV OPENBLAS_NUM_THREADS=1" \
    --change "ENV MKL_NUM_THREADS=1" \
    --change "LABEL org.opencontainers.image.title=assay-sandbox-python" \
    --change "LABEL io.assay.sandbox.recipe=$key" \
    --change 'CMD ["python3"]' \
    --message "assay sandbox image: debootstrap $suite minbase + $packages" \
    "$tarball" "$image" >/dev/null

  podman run --rm --network none "$image" python3 -c \
    'import numpy, pandas, matplotlib, openpyxl, xlrd, odf, os; print("ok", os.getuid(), pandas.__version__)' >&2
  log "built $image"
}

main "$@"
