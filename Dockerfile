# syntax=docker/dockerfile:1
# The nestcp image: `nestcp manager` (config/manager) as uid 65532, with the package catalog at
# /usr/share/nestcp/templates, on nothing else: the runtime stage is `FROM scratch` with the
# binary, its shared libraries and the loader, as Debian bookworm ships them.
#
#   docker build -t nestcp:dev .
#   hack/image-build.sh --tag nestcp:dev        buildah, no daemon, no registry needed
#
# Both stages run hack/image-stage.sh's steps: the build stage runs the script itself (same
# flags, same staging, same library check), and the script reads the two package lists below,
# so the image and `hack/image-stage.sh` (run where no Docker engine is) cannot drift.

# The build packages: hack/install-deps.sh's, without the test-only ones.
ARG NESTCP_BUILD_PACKAGES="build-essential cmake pkg-config git libcurl4-openssl-dev libcjson-dev libyaml-dev libssl-dev libev-dev libzstd-dev"
# The shared libraries nestcp links; hack/image-stage.sh checks this list with ldd and dpkg -S.
ARG NESTCP_RUNTIME_PACKAGES="libcurl4 libcjson1 libyaml-0-2 libssl3 libev4 libzstd1"

# The build stage's base: Debian bookworm (hack/image-build.sh may make it with mmdebstrap).
ARG NESTCP_BUILD_BASE=debian:bookworm

FROM $NESTCP_BUILD_BASE AS build
ARG NESTCP_BUILD_PACKAGES
ARG NESTCP_RUNTIME_PACKAGES
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $NESTCP_BUILD_PACKAGES \
    && rm -rf /var/lib/apt/lists/*
COPY . /src
# Builds /src as it is (Release, Debian's hardening flags), checks that NESTCP_RUNTIME_PACKAGES
# provides every shared library the binary needs, and stages the whole image in /stage/rootfs:
# the binary, the templates, those libraries and the loader, their copyright files, and
# /etc/passwd and /etc/group naming uid 65532.
RUN /src/hack/image-stage.sh --src /src --out /stage

FROM scratch
COPY --from=build /stage/rootfs/ /
USER 65532:65532
# libgnutls is loaded only because Debian's libcurl links libldap and librtmp, which nestcp never
# uses; both call gnutls_global_init themselves before they use it. Without gnutls's implicit
# initialisation at load time the manager starts 0.85 MiB smaller (docs/architecture.md,
# "Memory: measured, and where the rest is").
ENV GNUTLS_NO_IMPLICIT_INIT=1
ENTRYPOINT ["/usr/bin/nestcp"]
CMD ["manager", "--leader-elect", "--templates=/usr/share/nestcp/templates"]
