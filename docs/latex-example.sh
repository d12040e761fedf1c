#!/usr/bin/env bash
# Remakes docs/latex-example.pdf: page 1 of `attn scaled --example cat-slept --format latex`,
# a whole document, compiled as it is written. Needs pdflatex (texlive-latex-base) and
# pdfseparate (poppler-utils).
set -euo pipefail
cd "$(dirname "$0")/.."
attn=${ATTN:-.venv/bin/attn}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$attn" scaled --example cat-slept --format latex --output "$work/doc.tex"
(cd "$work" && SOURCE_DATE_EPOCH=0 FORCE_SOURCE_DATE=1 \
  pdflatex -interaction=nonstopmode -halt-on-error doc.tex > /dev/null)
pdfseparate -f 1 -l 1 "$work/doc.pdf" docs/latex-example.pdf
echo "docs/latex-example.pdf: page 1 of $(pdfinfo "$work/doc.pdf" | awk '/^Pages/ {print $2}')"
