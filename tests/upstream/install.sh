#!/usr/bin/env bash
# Fetch the unmodified upstream clients as published, as tarballs: their hook scripts and
# MCP shim import only Node built-ins and picocolors, so the rest of their dependency tree
# (an agent SDK, onnxruntime: ~1 GB) is not installed.
set -euo pipefail
cd "$(dirname "$0")"
VERSION=0.9.29
dest=node_modules/@agentmemory
mkdir -p "$dest"
for p in agentmemory mcp; do
  rm -rf "${dest:?}/$p"
  mkdir -p "$dest/$p"
  tgz=$(npm pack "@agentmemory/$p@$VERSION" --silent | tail -1)
  tar xzf "$tgz" -C "$dest/$p" --strip-components=1
  rm -f "$tgz"
done
rm -rf node_modules/picocolors && mkdir -p node_modules/picocolors
tgz=$(npm pack picocolors@1.1.1 --silent | tail -1)
tar xzf "$tgz" -C node_modules/picocolors --strip-components=1
rm -f "$tgz"
