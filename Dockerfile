# syntax=docker/dockerfile:1
# The nestcp image: `nestcp manager` (config/manager) on debian:bookworm-slim, as uid 65532,
# with the package catalog at /usr/share/nestcp/templates.
#
#   docker build -t nestcp:dev .
#
# Both stages run hack/image-stage.sh's steps: the build stage runs the script itself (same
# flags, same staging, same library check), and the script reads the two package lists below,
# so the image and `hack/image-stage.sh` (run where no Docker engine is) cannot drift.

# The build packages: hack/install-deps.sh's, without the test-only ones.
ARG NESTCP_BUILD_PACKAGES="build-essential cmake pkg-config git libcurl4-openssl-dev libcjson-dev libyaml-dev libssl-dev libev-dev"
# The shared libraries nestcp links; hack/image-stage.sh checks this list with ldd and dpkg -S.
ARG NESTCP_RUNTIME_PACKAGES="libcurl4 libcjson1 libyaml-0-2 libssl3 libev4"

FROM debian:bookworm AS build
ARG NESTCP_BUILD_PACKAGES
ARG NESTCP_RUNTIME_PACKAGES
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $NESTCP_BUILD_PACKAGES \
    && rm -rf /var/lib/apt/lists/*
COPY . /src
# Builds /src as it is (Release, Debian's hardening flags), stages /stage/rootfs and checks
# that NESTCP_RUNTIME_PACKAGES provides every shared library the binary needs.
RUN /src/hack/image-stage.sh --src /src --out /stage

FROM debian:bookworm-slim
ARG NESTCP_RUNTIME_PACKAGES
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $NESTCP_RUNTIME_PACKAGES \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /stage/rootfs/ /
USER 65532:65532
ENTRYPOINT ["/usr/bin/nestcp"]
CMD ["manager", "--leader-elect", "--templates=/usr/share/nestcp/templates"]
