# Builds the project's binaries on Debian bookworm and ships them, stripped, in a slim runtime
# image that runs as the non-root user 65532.
#
#   make docker-build [IMAGE=...] [TAG=...] [BUILD_IMAGE=...] [RUNTIME_IMAGE=...]
#
# BUILD_IMAGE / RUNTIME_IMAGE: any Debian bookworm root filesystem (test/images/build-images.sh
# passes local ones made with debootstrap when no registry is reachable).
#
# Debian packages: each stage names its list below; tools/image/install-packages.sh installs
# those, their dependencies and the base image's packages at exactly the versions of
# tools/image/debian-packages.lock (and fails, naming the package, when the mirror no longer has
# one). After editing a list, or to take Debian's updates, test/images/refresh-package-lock.sh
# rewrites the lock. The runtime image carries an SPDX 2.3 SBOM at
# /usr/share/doc/kube-extended-resource/sbom.spdx.json.
ARG BUILD_IMAGE=debian:bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim
# The CMake targets shipped in /usr/local/bin. A new binary is one more name here, plus a COPY
# of its source folder below if it lives in a new one.
ARG BINARIES="extended-resource-scheduler extended-resource-controller extended-resource-node-agent"

FROM ${BUILD_IMAGE} AS build
COPY tools/image/debian-packages.lock tools/image/install-packages.sh /tmp/ker-image/
RUN sh /tmp/ker-image/install-packages.sh build /tmp/ker-image/debian-packages.lock \
      build-essential cmake pkg-config ca-certificates \
      libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev \
      libcpp-httplib-dev libprotobuf-dev protobuf-compiler \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /tmp/ker-image
WORKDIR /src
# Only what the binaries are built from (with KER_BUILD_TESTS=OFF CMake reads nothing else), so
# edits to tests, docs or manifests keep the compile step cached. test/images/build-images.sh
# fingerprints exactly these COPY sources: keep them on COPY lines.
COPY CMakeLists.txt ./
COPY common common
COPY model model
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
COPY tools/image/debian-packages.lock tools/image/install-packages.sh /tmp/ker-image/
RUN sh /tmp/ker-image/install-packages.sh runtime /tmp/ker-image/debian-packages.lock \
      ca-certificates libcurl4 libssl3 libyaml-cpp0.7 libspdlog1.10 libfmt9 libcpp-httplib0.11 libprotobuf32 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log /tmp/ker-image \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nonroot
COPY --from=build /out/ /usr/local/bin/
# The SBOM: every Debian package installed here (dpkg-query) and the project's binaries, at
# VERSION (`--build-arg VERSION=...`; make docker-build leaves it "dev").
COPY tools/image/sbom.sh /tmp/ker-image/
ARG BINARIES
ARG VERSION=dev
RUN mkdir -p /usr/share/doc/kube-extended-resource \
 && sh /tmp/ker-image/sbom.sh "$VERSION" $(for b in ${BINARIES}; do echo "/usr/local/bin/$b"; done) \
      >/usr/share/doc/kube-extended-resource/sbom.spdx.json \
 && rm -rf /tmp/ker-image
USER 65532:65532
# Fails the build when a library is missing or a binary cannot start as the runtime user.
RUN for b in ${BINARIES}; do "/usr/local/bin/$b" --help >/dev/null || exit 1; done
ENTRYPOINT ["/usr/local/bin/extended-resource-scheduler"]
