# Builds both binaries on Debian bookworm and ships them in a slim runtime image that runs
# as a non-root user. Build: make docker-build IMAGE=... TAG=...
FROM debian:bookworm AS build
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential cmake pkg-config ca-certificates \
      libcurl4-openssl-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev \
      libcpp-httplib-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY common common
COPY scheduler scheduler
COPY controller controller
COPY tools tools
COPY test/CMakeLists.txt test/CMakeLists.txt
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKER_BUILD_TESTS=OFF -DKER_WERROR=ON \
 && cmake --build build -j "$(nproc)" --target extended-resource-scheduler extended-resource-controller \
 && strip build/scheduler/extended-resource-scheduler build/controller/extended-resource-controller

FROM debian:bookworm-slim
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates libcurl4 libssl3 libyaml-cpp0.7 libspdlog1.10 libfmt9 libcpp-httplib0.11 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 nonroot && useradd --uid 65532 --gid 65532 --no-create-home nonroot
COPY --from=build /src/build/scheduler/extended-resource-scheduler /usr/local/bin/
COPY --from=build /src/build/controller/extended-resource-controller /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/extended-resource-scheduler"]
