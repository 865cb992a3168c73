# Builds the project's binaries on Debian bookworm and ships them, stripped, in a slim runtime
# image that runs as the non-root user 65532.
#
#   make docker-build [IMAGE=...] [TAG=...] [BUILD_IMAGE=...] [RUNTIME_IMAGE=...]
#
# BUILD_IMAGE / RUNTIME_IMAGE: any Debian bookworm root filesystem (test/images/build-images.sh
# passes local ones made with debootstrap when no registry is reachable).
ARG BUILD_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
# The CMake targets shipped in /usr/local/bin. A new binary is one more name here, plus a COPY
# of its source folder below if it lives in a new one.
ARG BINARIES="extended-resource-scheduler extended-resource-controller extended-resource-node-agent"

FROM ${BUILD_IMAGE} AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake pkg-config ca-certificates \
      libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev \
      libcpp-httplib-dev libprotobuf-dev protobuf-compiler \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the binaries are built from (with KER_BUILD_TESTS=OFF CMake reads nothing else), so
# edits to tests, docs or manifests keep the compile step cached. test/images/build-images.sh
# fingerprints exactly these COPY sources: keep them on COPY lines.
COPY CMakeLists.txt ./
COPY common common
COPY nri nri
COPY scheduler scheduler
COPY controller controller
COPY agent agent
COPY tools tools
ARG BINARIES
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKER_BUILD_TESTS=OFF -DKER_WERROR=ON \
 && cmake --build build -j "$(nproc)" --target ${BINARIES} \
 && mkdir -p /out \
 && for b in ${BINARIES}; do \
      f=$(find build -type f -name "$b" -perm -u+x -not -path '*/CMakeFiles/*' | head -n 1); \
      [ -n "$f" ] || { echo "built no executable named $b" >&2; exit 1; }; \
      install -s -m 0755 "$f" /out/; \
    done

FROM ${RUNTIME_IMAGE}
# The shared libraries the binaries link (ldd): bookworm's package names.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates libcurl4 libssl3 libyaml-cpp0.7 libspdlog1.10 libfmt9 libcpp-httplib0.11 libprotobuf32 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
# Fails the build when a library is missing or a binary cannot start as the runtime user.
ARG BINARIES
RUN for b in ${BINARIES}; do "/usr/local/bin/$b" --help >/dev/null || exit 1; done
ENTRYPOINT ["/usr/local/bin/extended-resource-scheduler"]
