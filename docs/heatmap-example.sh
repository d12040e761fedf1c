#!/usr/bin/env bash
# Remakes docs/heatmap-example.png: the --plot figure of `attn multihead` (the [plot] extra).
set -euo pipefail
cd "$(dirname "$0")/.." && "${ATTN:-.venv/bin/attn}" multihead --example two-heads --plot docs/heatmap-example.png > /dev/null
