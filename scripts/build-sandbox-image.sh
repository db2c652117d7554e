#!/usr/bin/env bash
# Build the sandbox image from a source checkout. The script itself ships
# inside the package (assay/sandbox_runtimes/image/), so `assay sandbox
# build-image` runs the same file from an installed wheel.
exec bash "$(dirname "$0")/../sandbox_runtimes/image/build-sandbox-image.sh" "$@"
