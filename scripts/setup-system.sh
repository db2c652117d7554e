#!/usr/bin/env bash
# Install and start what assay's tests need on a Debian machine (run as root):
# podman + runc + debootstrap, Chromium (HTML report tests, the pdf renderer),
# podman's settings for these machines, the sandbox image, PostgreSQL and
# MariaDB up.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
for bin in podman runc debootstrap chromium g++ cmake; do  # each package is named as its binary (g++, cmake: llama-cpp-python, tests/models)
  command -v "$bin" >/dev/null 2>&1 || need_pkgs+=("$bin")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# podman on these machines: runc (crun fails on hybrid cgroups), cgroupfs,
# and explicit default ulimits (the host's cannot be raised inside).
mkdir -p /etc/containers
if ! grep -q 'assay-managed' /etc/containers/containers.conf 2>/dev/null; then
  cat > /etc/containers/containers.conf <<'CONF'
# assay-managed: settings podman needs on these machines
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
fi

# Databases: started before the session on these machines; start them if not.
if ! pg_isready -q -h 127.0.0.1 2>/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
fi
if ! mariadb-admin -uroot ping >/dev/null 2>&1; then
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
fi
for _ in $(seq 1 30); do
  pg_isready -q -h 127.0.0.1 && mariadb-admin -uroot ping >/dev/null 2>&1 && break
  sleep 1
done

# The sandbox image, built from Debian packages (no registry is reachable).
if [ -x scripts/build-sandbox-image.sh ]; then
  bash scripts/build-sandbox-image.sh
fi
