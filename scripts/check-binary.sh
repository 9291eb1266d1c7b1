#!/usr/bin/env bash
# Builds aasad as the Dockerfile's build stage does (release, static Swift standard library) and
# checks what it links: OpenSSL, nghttp2, zlib and libcurl, glibc, and the C++ runtime the static
# Swift runtime needs (libstdc++, libgcc_s; both in debian:bookworm-slim), plus what libcurl itself
# links (the Dockerfile's `libcurl4` package pulls those in as its dependencies). Anything else
# fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# AASAD_FRONTEND: a frontend at low priority (scripts/lib.sh nice_frontend), for a build beside
# the tests; the same in both commands, or the second builds again.
# -gnone as the Dockerfile: its binary is stripped, so debug information would only cost time.
# -no-emit-module-separately-wmo as the Dockerfile: a release build compiles each module whole,
# and the driver would run a second frontend per module only to emit its interface early.
flags=(-Xswiftc -gnone -Xswiftc -no-emit-module-separately-wmo)
[ -z "${AASAD_FRONTEND:-}" ] || flags+=(-Xswiftc -driver-use-frontend-path -Xswiftc "$AASAD_FRONTEND")
swift build -c release --product aasad --static-swift-stdlib --scratch-path .build-static "${flags[@]}" >/dev/null
# --build-only: scripts/test builds it beside the tests and checks it afterwards.
[ "${1:-}" != --build-only ] || exit 0
bin="$(swift build -c release --static-swift-stdlib --scratch-path .build-static "${flags[@]}" --show-bin-path)/aasad"
allowed='^(linux-vdso\.so\.1|libssl\.so\.3|libcrypto\.so\.3|libnghttp2\.so\.14|libz\.so\.1|libcurl\.so\.4|libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|/lib64/ld-linux-x86-64\.so\.2|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1)$'
# libcurl's own dependencies, as the dynamic linker resolves them on this machine.
curl_path="$(ldd "$bin" | awk '$1 == "libcurl.so.4" {print $3}')"
curl_deps=" "
[ -n "$curl_path" ] && curl_deps=" $(ldd "$curl_path" | awk '{print $1}' | tr '\n' ' ')"
status=0
while read -r lib _; do
    if ! [[ "$lib" =~ $allowed ]] && [[ "$curl_deps" != *" $lib "* ]]; then
        echo "error: the release binary links $lib, which the runtime image does not provide" >&2
        status=1
    fi
done < <(ldd "$bin")
"$bin" --version >/dev/null
[ $status -eq 0 ] && echo "binary: links only $(ldd "$bin" | awk '{print $1}' | grep -v vdso | tr '\n' ' ')"
exit $status
