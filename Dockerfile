# syntax=docker/dockerfile:1

# paddock, as a container image: the static paddock binary on distroless.
# It is meant as a base to copy paddock from into an agent's own image:
#
#   COPY --from=paddock /usr/local/bin/paddock /usr/local/bin/paddock
#
# Build:  docker build -t paddock .
# Try:    docker run --rm paddock      (runs `paddock ps` under paddock: a smoke test)
# See docs/container.md for the run settings and why each one is there.

# GO_VERSION must be at least the `go` line of go.mod (1.26.8): the official
# golang images set GOTOOLCHAIN=local, so an older toolchain fails instead of
# downloading a newer one. Pin it (1.26.8, or a digest) for reproducible builds.
ARG GO_VERSION=1.26
# static-debian12:nonroot has no shell and no libc, but has /etc/passwd with the
# nonroot user (65532), its home /home/nonroot (the journal's default place) and
# a world-writable /tmp: paddock puts its control socket in /dev/shm, which the
# runtime mounts in every container, else in /tmp (docs/container.md).
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

# The builder runs on the build machine's platform and cross-compiles (pure Go,
# no cgo), so multi-platform builds need no emulation.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags=-w -o /out/paddock ./cmd/paddock
# -w, not -s: the symbol table tells paddock which signals it was started
# with ignored, so that it passes them on to CMD as tini does.

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="paddock" \
      org.opencontainers.image.description="Run an AI agent so it can only signal, trace or write into the processes it owns" \
      org.opencontainers.image.source="https://github.com/paddock-dev/paddock"
# Owned by root and not writable by the agent's user.
COPY --from=build /out/paddock /usr/local/bin/paddock
# Numeric, so that Kubernetes' runAsNonRoot can check it.
USER 65532:65532
# paddock is PID 1: it reaps orphans, forwards signals and exits with CMD's
# status (128+N when CMD died of signal N), so no --init/tini is needed.
ENTRYPOINT ["/usr/local/bin/paddock", "run", "--"]
# There is no shell in this image; the default CMD asks the session what it owns.
CMD ["/usr/local/bin/paddock", "ps"]
