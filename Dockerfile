# aasad in a container: build with the static Swift standard library, run on a small Debian with
# only the C libraries aasad links (libssl3, libnghttp2-14, zlib1g, libcurl4), as a non-root user.
#
#   docker build -t aasad .
#   docker run -p 443:8443 -p 127.0.0.1:9190:9190 -v /path/to/config:/config:ro aasad
#
# The config directory is a volume (read-only is fine: aasad only reads it); certificates go in
# its tls/ and sites/*/tls/ directories, or a development certificate is made in /state.

# The build stage makes /out/aasad. scripts/image-test.sh, on machines with no registry to pull
# Swift's image from, puts in its place an image holding the release binary scripts/check-binary.sh
# builds the same way, and builds the runtime stage below as it is.
FROM swift:6.0-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends libssl-dev libnghttp2-dev zlib1g-dev libcurl4-openssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
# -gnone: the binary is stripped on install, so debug information would only cost compile time
# (8 % of the build's CPU: 348 against 379 s on the 2-core machine).
# -no-emit-module-separately-wmo: each module is compiled whole, and the driver would otherwise run
# a second frontend per module only to emit its interface early (same binary, less compile time).
RUN swift build -c release --product aasad --static-swift-stdlib -Xswiftc -gnone -Xswiftc -no-emit-module-separately-wmo \
    && install -D --strip "$(swift build -c release --show-bin-path)/aasad" /out/aasad

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends libssl3 libnghttp2-14 zlib1g libcurl4 ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /state --shell /usr/sbin/nologin aasad \
    && mkdir -p /config /state && chown aasad:aasad /state
COPY --from=build /out/aasad /usr/local/bin/aasad
COPY config /config
USER aasad
VOLUME ["/config", "/state"]
# Only HTTPS is exposed. The admin listener (9190: /healthz, /readyz, /metrics, /sites, no
# authentication; /sites lists every hosted domain) listens on all of the container's addresses,
# because what needs it reaches the container from outside its loopback: kubelet probes and
# Prometheus on Kubernetes, a scraper on the Docker network. It is deliberately not in EXPOSE, so
# `docker run -P` does not publish it; publish it on the host's loopback only when you want it
# there (`-p 127.0.0.1:9190:9190`, as deploy/compose does), and limit it on Kubernetes with the
# NetworkPolicy in deploy/kubernetes.
EXPOSE 8443
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s CMD curl -fsS http://127.0.0.1:9190/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/aasad", "serve", "--config", "/config", "--state", "/state", "--https", ":8443", "--admin", ":9190", "--log-format", "json"]
