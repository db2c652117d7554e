#!/usr/bin/env bash
# Install and start what assay's tests need on a Debian machine (run as root):
# podman + runc + debootstrap, Docker Engine (docker.io: the tests start their
# own private dockerd; no system daemon is started), gVisor (runsc), Chromium
# (HTML report tests, the pdf renderer), podman's settings for these machines
# (runsc registered with podman), the sandbox image, PostgreSQL, MariaDB,
# Redis and RabbitMQ up (the brokers of `assay worker`).
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
# package:binary (g++, cmake: llama-cpp-python, tests/models; dockerd: the
# docker runtime's tests; runsc: gVisor; redis-server, rabbitmq-server: the
# brokers of tests/worker)
for pair in podman:podman runc:runc debootstrap:debootstrap chromium:chromium g++:g++ cmake:cmake \
            docker.io:dockerd runsc:runsc redis-server:redis-server rabbitmq-server:rabbitmq-server; do
  command -v "${pair#*:}" >/dev/null 2>&1 || [ -x "/usr/sbin/${pair#*:}" ] || need_pkgs+=("${pair%%:*}")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  apt-get update -qq
  # docker.io's maintainer scripts would start the system daemon: the tests
  # start their own on a private socket, so service starts are denied here.
  policy=/usr/sbin/policy-rc.d
  restore_policy=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && restore_policy=1
  fi
  apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
  [ -z "$restore_policy" ] || rm -f "$policy"
fi

# gVisor for podman: podman's runtime table takes a path, not flags, so runsc is
# registered through a wrapper that adds the two flags it needs here
# (--network=none: podman's "none" network fails runsc's root network
# namespace check; --oci-seccomp: without it runsc ignores the seccomp profile).
# The Docker Engine gets the same flags as runtimeArgs (tests/sandbox_engines/docker_daemon.py).
runsc_wrapper=/usr/local/libexec/assay/runsc
mkdir -p "$(dirname "$runsc_wrapper")"
cat > "$runsc_wrapper" <<'WRAP'
#!/bin/sh
# assay-managed (scripts/setup-system.sh): gVisor with the flags assay's sandboxes need.
exec /usr/bin/runsc --network=none --oci-seccomp "$@"
WRAP
chmod 755 "$runsc_wrapper"

# podman on these machines: runc (crun fails on hybrid cgroups), cgroupfs,
# and explicit default ulimits (the host's cannot be raised inside).
# The marker carries a version: a file written by an older version of this
# script is rewritten, one written by someone else is left alone.
mkdir -p /etc/containers
conf=/etc/containers/containers.conf
if [ ! -e "$conf" ] || { grep -q 'assay-managed' "$conf" && ! grep -q 'assay-managed v2' "$conf"; }; then
  cat > "$conf" <<CONF
# assay-managed v2: settings podman needs on these machines
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
[engine.runtimes]
runsc = ["$runsc_wrapper"]
CONF
elif ! grep -q 'assay-managed' "$conf"; then
  echo "setup-system: $conf is not assay's; for gVisor add: [engine.runtimes] runsc = [\"$runsc_wrapper\"]" >&2
fi

# Databases: started before the session on these machines; start them if not.
if ! pg_isready -q -h 127.0.0.1 2>/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
fi
if ! mariadb-admin -uroot ping >/dev/null 2>&1; then
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
fi
# Brokers of `assay worker` (tests/worker): loopback only, nothing kept on disk for Redis.
if ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
if ! rabbitmq-diagnostics -q ping >/dev/null 2>&1; then
  rabbitmq-server -detached || true
fi
for _ in $(seq 1 60); do
  pg_isready -q -h 127.0.0.1 && mariadb-admin -uroot ping >/dev/null 2>&1 \
    && redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && rabbitmq-diagnostics -q ping >/dev/null 2>&1 && break
  sleep 1
done

# The sandbox image, built from Debian packages (no registry is reachable).
if [ -x scripts/build-sandbox-image.sh ]; then
  bash scripts/build-sandbox-image.sh
fi
