# The controller image: ARC's image contract (arc-manager-helm-rbac.md §7) for this Python port.
#
#   /manager      the controller manager (arc-controller); the chart runs `command: ["/manager"]`
#   /ghalistener  the listener (arc-listener); the manager starts listener pods with it
#   user 65532:65532, nothing writable but /tmp (the chart mounts an emptyDir there)
#
# Build:  docker build --build-arg VERSION=0.14.2 -t <registry>/arc-controllers-python:0.14.2 .
#         or `make image` (podman, via hack/image.sh; PYTHON_IMAGE=<base> picks the base image,
#         e.g. one made from Debian's packages where no registry is reachable: see the README)
# VERSION must equal, or share major.minor with, the gha-runner-scale-set chart's appVersion
# (the version gate deletes AutoscalingRunnerSets otherwise); `dev` (the default) accepts any.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
# The label lets hack/image.sh prune this build's own untagged stage images, and nobody else's.
LABEL arc-controllers-python.image=build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN python -m venv /opt/arc \
 && /opt/arc/bin/pip install . \
 && /opt/arc/bin/python -m compileall -q /opt/arc

FROM ${PYTHON_IMAGE}
LABEL arc-controllers-python.image=controller
ARG VERSION=dev
ARG COMMIT_SHA=dev
ENV ARC_BUILD_VERSION=${VERSION} \
    ARC_COMMIT_SHA=${COMMIT_SHA} \
    PATH=/opt/arc/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
COPY --from=build /opt/arc /opt/arc
# Symlinks to the console scripts: their shebang names /opt/arc/bin/python, so the kernel runs
# them through the venv. Everything stays root-owned and read-only to user 65532.
RUN ln -s /opt/arc/bin/arc-controller /manager \
 && ln -s /opt/arc/bin/arc-listener /ghalistener
WORKDIR /
USER 65532:65532
ENTRYPOINT ["/manager"]
