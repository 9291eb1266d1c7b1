#!/usr/bin/env bash
# Builds the Dockerfile's runtime stage with podman (runc) around the release binary that
# scripts/check-binary.sh builds, runs it as production would (read-only root filesystem, state on
# a tmpfs, no extra capabilities) and checks what the Dockerfile promises: the shipped config's
# AASA file over HTTPS with HTTP/1.1 and HTTP/2 (200, application/json), a non-root user, a
# HEALTHCHECK that reports healthy, and a drain on SIGTERM within the grace; then the same with
# deploy/compose/docker-compose.yml through podman-compose. Prints the image's size.
#
#   scripts/image-test.sh [--short | --prepare | --compare]
#   AASAD_BINARY=path/to/aasad scripts/image-test.sh
#
# --short (scripts/test): skips the compose run. --prepare: makes the base image when absent and
# builds the runtime stage's package layer around an empty placeholder binary, then stops:
# scripts/test does it while the release binary builds, so that the test proper only adds the
# binary's layer and the checks. --compare: builds nginx's and Caddy's Debian packages on the same
# base, the way the runtime stage installs aasad's libraries, and prints the three images' sizes
# (docs/container.md); not run by scripts/test: it checks nothing and spends minutes on downloads
# for figures that change only with Debian's packages. The base image, localhost/debian:bookworm-slim,
# is made once from Debian's own packages (debootstrap) when absent: no registry is needed.
# Needs root (podman's networking and debootstrap), podman and runc; says so and exits 0 when
# they are missing, unless IMAGE_TEST_REQUIRED=1 (then exits 1).
set -euo pipefail
trap 'echo "error: scripts/image-test.sh line $LINENO: \"$BASH_COMMAND\" exited $?" >&2' ERR
cd "$(dirname "$0")/.."

short=0
prepare=0
compare=0
case "${1:-}" in
--short) short=1 ;;
--prepare) prepare=1 ;;
--compare) compare=1 ;;
"") ;;
*) echo "usage: scripts/image-test.sh [--short | --prepare | --compare]" >&2; exit 64 ;;
esac

cannot() {
    echo "image test: cannot run: $1" >&2
    [ "${IMAGE_TEST_REQUIRED:-0}" = 1 ] && exit 1
    exit 0
}
[ "$(id -u)" -eq 0 ] || cannot "not root (podman's bridge network and debootstrap need root)"
for tool in podman runc debootstrap curl; do
    command -v "$tool" >/dev/null 2>&1 || cannot "$tool is not installed (apt-get install podman runc debootstrap)"
done

# crun, podman's default, fails on cgroup v1 machines such as this one; runc works. The limits
# keep a container from inheriting the host's huge descriptor limit (aasad sizes its connection
# table from it) and bound its processes.
# --health-interval disable: podman schedules HEALTHCHECK with systemd timers, which a machine
# without systemd lacks (it logs an error per container); the test runs the check itself.
podman_run=(podman run --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --health-interval disable)
base=localhost/debian:bookworm-slim
tag=localhost/aasad:test
binary_tag=localhost/aasad-binary:test
# Seconds `podman stop` waits after SIGTERM before SIGKILL: deploy/compose's stop_grace_period.
grace=20
# The drain must end well inside the grace: aasad's --drain-timeout is 10 s.
drain_limit=12

work=$(mktemp -d)
containers=()
cleanup() {
    for c in "${containers[@]}"; do podman rm -f -t 0 "$c" >/dev/null 2>&1 || true; done
    # debootstrap mounts /proc and /sys in its target while it installs: a run stopped then would
    # leave them mounted, and rm -rf would walk into the host's /sys. Unmount first, deepest first.
    awk -v w="$work/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n 1 umount -l
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# The base: debootstrap's minbase (Priority: required, and apt), then what a container never
# reads removed, as Debian's own bookworm-slim image does (docs, man pages, locales, apt's lists
# and caches), and dpkg told to leave them out of packages installed later.
make_base() {
    local mirror security root="$work/base" started=$SECONDS
    mirror=$(grep -hoE '^(URIs:|deb) +https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
        grep -v -- -security | awk '{print $2}' | head -1 || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    security=$(grep -hoE '^(URIs:|deb) +https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
        grep -- -security | awk '{print $2}' | head -1 || true)
    security=${security:-http://deb.debian.org/debian-security}
    echo "image test: making $base with debootstrap from $mirror"
    # tzdata: aasad prints times in UTC and reads no zone; e2fsprogs: no file system is made in a
    # container. Neither is a dependency of anything installed.
    debootstrap --variant=minbase --exclude=tzdata,e2fsprogs bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
        tail -20 "$work/debootstrap.log" >&2
        return 1
    }
    cat >"$root/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
EOF
    cat >"$root/etc/apt/apt.conf.d/slim" <<'EOF'
APT::Install-Recommends "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
EOF
    # Security and point-release updates, as Debian's image has them: the runtime stage's libssl3
    # comes from there. debootstrap installs from the release alone.
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
        "$mirror" "$mirror" "$security" >"$root/etc/apt/sources.list"
    DEBIAN_FRONTEND=noninteractive chroot "$root" sh -c 'apt-get update -qq && apt-get upgrade -y -qq' >>"$work/debootstrap.log" 2>&1 || {
        tail -20 "$work/debootstrap.log" >&2
        return 1
    }
    find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
        "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
        "$root"/var/log/* "$root"/tmp/*
    tar -C "$root" -c . | podman import --quiet --change 'CMD ["bash"]' - "$base" >/dev/null
    rm -rf --one-file-system "$root"
    echo "image test: base made in $((SECONDS - started)) s: $(podman image inspect --format '{{.Size}}' "$base") bytes"
}
# One base at a time: scripts/test starts --prepare beside the build, then the test itself.
exec 9>"${TMPDIR:-/tmp}/aasad-image-base.lock"
flock 9
podman image exists "$base" || make_base
flock -u 9

# compressed_size IMAGE: what a registry stores and a pull downloads, as its tags pages show it
# ("Compressed size"): the image's layers gzipped.
compressed_size() {
    podman save --format docker-archive "$1" 2>/dev/null | gzip -6 | wc -c
}

if [ "$compare" = 1 ]; then
    # nginx and Caddy from Debian's packages on the same base, installed as the Dockerfile's
    # runtime stage installs aasad's libraries (no recommends, apt's lists removed): the same
    # base and packaging for all three, so the difference is the server and what it links.
    printf '%-28s %14s %14s\n' image bytes gzip
    for server in nginx caddy; do
        printf 'FROM %s\nRUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends %s && rm -rf /var/lib/apt/lists/*\n' \
            "$base" "$server" >"$work/Containerfile.$server"
        podman build --runtime runc --pull=never -q -t "localhost/compare-$server:debian" -f "$work/Containerfile.$server" "$work" \
            >"$work/build-$server.log" 2>&1 || { tail -30 "$work/build-$server.log" >&2; exit 1; }
    done
    for image in "$base" localhost/compare-nginx:debian localhost/compare-caddy:debian "$tag"; do
        podman image exists "$image" || { printf '%-28s %14s\n' "$image" "absent"; continue; }
        printf '%-28s %14s %14s\n' "$image" "$(podman image inspect --format '{{.Size}}' "$image")" "$(compressed_size "$image")"
    done
    exit 0
fi

# build_runtime BINARY_FILE: the Dockerfile's runtime stage around BINARY_FILE, tagged $tag. The
# binary goes in an image of its own at /out/aasad, and the Dockerfile's build stage (from its
# `FROM … AS build` line to the next FROM) is replaced by that image; every other line is the
# Dockerfile's own. --format docker: podman keeps HEALTHCHECK only in Docker's image format (OCI
# has no field for it).
build_runtime() {
    rm -rf "$work/binary"
    mkdir "$work/binary"
    cp "$1" "$work/binary/aasad"
    printf 'FROM scratch\nCOPY aasad /out/aasad\n' >"$work/binary/Containerfile"
    podman build --pull=never -q -t "$binary_tag" -f "$work/binary/Containerfile" "$work/binary" >/dev/null
    awk -v image="$binary_tag" '
        /^FROM / { skipping = 0 }
        /^FROM .* AS build$/ { print "FROM " image " AS build"; skipping = 1; replaced = 1; next }
        !skipping { print }
        END { if (!replaced) { print "the Dockerfile has no \"FROM … AS build\" stage" > "/dev/stderr"; exit 1 } }
    ' Dockerfile >"$work/Dockerfile"
    podman build --runtime runc --pull=never --format docker --target runtime \
        -f "$work/Dockerfile" -t "$tag" . >"$work/build.log" 2>&1 || {
        tail -30 "$work/build.log" >&2
        return 1
    }
}

if [ "$prepare" = 1 ]; then
    : >"$work/placeholder"
    started=$SECONDS
    build_runtime "$work/placeholder"
    echo "image test: the runtime stage's packages installed in $((SECONDS - started)) s (cached for the test)"
    exit 0
fi

# The release binary scripts/check-binary.sh builds, or AASAD_BINARY when set (one built the same
# way), stripped as the Dockerfile's build stage strips it.
bin=${AASAD_BINARY:-}
if [ -z "$bin" ]; then
    scripts/check-binary.sh --build-only
    bin="$(swift build -c release --static-swift-stdlib --scratch-path .build-static --show-bin-path)/aasad"
fi
strip -o "$work/aasad" "$bin"
echo "image test: binary $(stat -c %s "$bin") bytes, $(stat -c %s "$work/aasad") stripped"
started=$SECONDS
build_runtime "$work/aasad"
size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "image test: built $tag in $((SECONDS - started)) s: $size bytes ($((size / 1000000)) MB)"

# check_serving NAME: the container's published 8443 answers the AASA file over HTTP/1.1 and
# HTTP/2 with 200 and application/json, and its admin port answers /healthz.
check_serving() {
    local name=$1 port url
    port=$(podman port "$name" 8443/tcp | head -1 | sed 's/.*://')
    url="https://links.localhost:$port/.well-known/apple-app-site-association"
    # Up to 60 s for the container to start serving (a loaded machine is slow to start one).
    for _ in $(seq 1 300); do
        curl -sk -o /dev/null --connect-to "links.localhost:$port:127.0.0.1:$port" "$url" && break
        sleep 0.2
    done
    for version in --http1.1 --http2; do
        local got
        got=$(curl -sk "$version" -o "$work/aasa.json" -w '%{http_code} %{http_version} %{content_type}' \
            --connect-to "links.localhost:$port:127.0.0.1:$port" "$url") || got="no answer"
        local want="200 ${version#--http} application/json"
        [ "$got" = "$want" ] || { echo "error: $name: $version gave \"$got\", wanted \"$want\"" >&2; podman logs "$name" 2>&1 | tail -20 >&2; return 1; }
        python3 -c 'import json,sys; json.load(open(sys.argv[1]))["applinks"]' "$work/aasa.json"
    done
    echo "image test: $name serves the AASA file over HTTP/1.1 and HTTP/2 (200 application/json)"
}

# check_user NAME: the serving process is not root, seen from the host.
check_user() {
    local pid uid
    pid=$(podman inspect --format '{{.State.Pid}}' "$1")
    uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
    [ "$uid" != 0 ] || { echo "error: $1: aasad runs as root" >&2; return 1; }
    [ "$uid" = 10001 ] || { echo "error: $1: aasad runs as uid $uid, the Dockerfile's user is 10001" >&2; return 1; }
    echo "image test: $1 runs aasad as uid $uid"
}

# check_health NAME: the image's HEALTHCHECK, run now, reports healthy.
check_health() {
    local healthcheck out
    healthcheck=$(podman image inspect "$tag" | python3 -c 'import json, sys; print(json.dumps((json.load(sys.stdin)[0].get("Healthcheck") or {}).get("Test")))')
    [ "$healthcheck" != null ] || { echo "error: the image has no HEALTHCHECK (built without --format docker?)" >&2; return 1; }
    out=$(podman healthcheck run "$1" 2>&1) || { echo "error: $1: HEALTHCHECK failed: $out" >&2; return 1; }
    local status
    status=$(podman inspect --format '{{.State.Health.Status}}' "$1")
    [ "$status" = healthy ] || { echo "error: $1: health is \"$status\"" >&2; return 1; }
    echo "image test: $1's HEALTHCHECK reports healthy"
}

# check_stop NAME: SIGTERM drains: a request begun before it (its head half sent) is answered
# after it, with Connection: close, and the container then ends with status 0 well inside the
# grace. Ordered by the container's own log line, not by a pause.
check_stop() {
    local took code port
    port=$(podman port "$1" 8443/tcp | head -1 | sed 's/.*://')
    # Prints the seconds from SIGTERM to the container's end.
    took=$(python3 - "$1" "$port" "$grace" <<'EOF_PY'
import socket, ssl, subprocess, sys, time
name, port, grace = sys.argv[1], int(sys.argv[2]), sys.argv[3]
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
context.set_alpn_protocols(["http/1.1"])
conn = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=15), server_hostname="links.localhost")
conn.sendall(b"GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: links.localhost\r\n")
signalled = time.monotonic()
stop = subprocess.Popen(["podman", "stop", "-t", grace, name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 10
while b"stopping" not in subprocess.run(["podman", "logs", name], capture_output=True).stderr:
    if time.monotonic() > deadline:
        sys.exit(f"error: {name}: no 'stopping' in its log 10 s after SIGTERM")
    time.sleep(0.05)
conn.sendall(b"\r\n")
answer = b""
while chunk := conn.recv(65536):
    answer += chunk
head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
if not head.startswith("http/1.1 200") or "connection: close" not in head:
    sys.exit(f"error: {name}: the request begun before SIGTERM got {head.splitlines()[:1] or 'nothing'}, wanted 200 with connection: close")
stop.wait(timeout=int(grace) + 10)
print(f"{time.monotonic() - signalled:.1f}")
EOF_PY
    ) || { podman logs "$1" 2>&1 | tail -20 >&2; return 1; }
    code=$(podman inspect --format '{{.State.ExitCode}}' "$1")
    [ "$code" = 0 ] || { echo "error: $1: exit status $code after SIGTERM (137: killed at the grace's end)" >&2; podman logs "$1" 2>&1 | tail -20 >&2; return 1; }
    python3 -c 'import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))' "$took" "$drain_limit" || { echo "error: $1: SIGTERM took $took s, over $drain_limit" >&2; return 1; }
    echo "image test: $1 answered a request begun before SIGTERM, then stopped with status 0 in $took s (grace $grace s)"
}

# The root filesystem read-only; the state directory (the development certificate) a tmpfs owned by
# the image's user; the shipped config from the image; the ports on the host's loopback, on ports
# the kernel picks so that nothing else on the machine is in the way.
name=aasad-image-test-$$
containers+=("$name")
"${podman_run[@]}" -d --name "$name" --read-only --tmpfs /state:rw,nosuid,nodev,mode=0700,U \
    --cap-drop all --security-opt no-new-privileges -p 127.0.0.1::8443 "$tag" >/dev/null 2>"$work/run.log" ||
    { cat "$work/run.log" >&2; exit 1; }
check_serving "$name"
check_user "$name"
check_health "$name"
check_stop "$name"

[ "$short" = 1 ] && { echo "image test: passed (short: compose not run); image $size bytes"; exit 0; }

# Compose, as deploy/compose/docker-compose.yml says, on its image name, with the host ports made
# free ones (the file publishes 443 and 9190, which this machine's other servers may hold).
if ! command -v podman-compose >/dev/null 2>&1; then
    echo "image test: compose not run: podman-compose is not installed (apt-get install podman-compose)"
    echo "image test: passed; image $size bytes"
    exit 0
fi
podman tag "$tag" localhost/aasad:latest
project=aasadimagetest$$
mkdir "$work/compose"
sed -e 's/"443:8443"/"127.0.0.1::8443"/' -e 's/"127.0.0.1:9190:9190"/"127.0.0.1::9190"/' \
    -e 's#\.\./\.\./config#'"$PWD"'/config#' -e 's#build: \.\./\.\.#build: '"$PWD"'#' \
    deploy/compose/docker-compose.yml >"$work/compose/docker-compose.yml"
compose=(podman-compose --podman-run-args="${podman_run[*]:2}" -p "$project" -f "$work/compose/docker-compose.yml")
compose_down() { "${compose[@]}" down -v >/dev/null 2>&1 || true; }
trap 'compose_down; cleanup' EXIT
"${compose[@]}" up -d --no-build >"$work/compose.log" 2>&1 || { cat "$work/compose.log" >&2; exit 1; }
cname=$(podman ps --filter "label=io.podman.compose.project=$project" --format '{{.Names}}' | head -1)
[ -n "$cname" ] || { echo "error: compose started no container" >&2; cat "$work/compose.log" >&2; exit 1; }
check_serving "$cname"
check_user "$cname"
check_health "$cname"
check_stop "$cname"
echo "image test: passed; image $size bytes"
