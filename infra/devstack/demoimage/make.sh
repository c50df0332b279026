#!/bin/sh
# make.sh writes image.tif, the local stack's demo IIIF image: a 3072x2048
# chart of 24 labelled 512-px cells, each divided into 256-px squares
# labelled with their pixel coordinates, saved by libvips as a tiled
# pyramidal TIFF of 256x256 JPEG tiles. It needs libvips alone (Debian's
# libvips-tools), runs in a temporary directory and writes image.tif into
# the directory it is run from: cd infra/devstack/demoimage && sh make.sh
set -eu
out=$(pwd)/image.tif
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
W=3072 H=2048 CELL=512 SQUARE=256

# A pastel gradient: red grows to the east, green to the south.
vips xyz xy.v $W $H
vips extract_band xy.v x.v 0
vips extract_band xy.v y.v 1
vips linear x.v r.v "$(awk "BEGIN { print 90 / $W }")" 140 --uchar
vips linear y.v g.v "$(awk "BEGIN { print 90 / $H }")" 140 --uchar
vips linear x.v b.v --uchar -- "$(awk "BEGIN { print -60 / $W }")" 230
vips bandjoin "r.v g.v b.v" chart.v
vips copy chart.v chart2.v --interpretation srgb
mv chart2.v chart.v

# Lines: light every 64 px, darker every square, darkest around cells.
x=0
while [ $x -lt $W ]; do
  vips draw_rect chart.v "200 200 200" $x 0 1 $H --fill
  x=$((x + 64))
done
y=0
while [ $y -lt $H ]; do
  vips draw_rect chart.v "200 200 200" 0 $y $W 1 --fill
  y=$((y + 64))
done
x=0
while [ $x -lt $W ]; do
  vips draw_rect chart.v "90 90 110" $x 0 2 $H --fill
  x=$((x + SQUARE))
done
y=0
while [ $y -lt $H ]; do
  vips draw_rect chart.v "90 90 110" 0 $y $W 2 --fill
  y=$((y + SQUARE))
done
x=0
while [ $x -lt $W ]; do
  vips draw_rect chart.v "30 30 50" $x 0 6 $H --fill
  x=$((x + CELL))
done
y=0
while [ $y -lt $H ]; do
  vips draw_rect chart.v "30 30 50" 0 $y $W 6 --fill
  y=$((y + CELL))
done

# Labels: each square's pixel coordinates, small; each cell's name (a
# row letter and a column number), large, in its first square.
y=0
while [ $y -lt $H ]; do
  x=0
  while [ $x -lt $W ]; do
    vips text t.v "$x,$y" --dpi 110 --font "sans"
    th=$(vipsheader -f height t.v)
    vips draw_mask chart.v "40 40 60" t.v $((x + 12)) $((y + SQUARE - 12 - th))
    x=$((x + SQUARE))
  done
  y=$((y + SQUARE))
done
row=0
for letter in A B C D; do
  col=0
  while [ $col -lt $((W / CELL)) ]; do
    vips text t.v "$letter$((col + 1))" --dpi 600 --font "sans bold"
    tw=$(vipsheader -f width t.v)
    th=$(vipsheader -f height t.v)
    vips draw_mask chart.v "20 20 40" t.v $((col * CELL + (SQUARE - tw) / 2)) $((row * CELL + (SQUARE - th) / 2))
    col=$((col + 1))
  done
  row=$((row + 1))
done

vips tiffsave chart.v "$out" --tile --pyramid --compression jpeg --Q 75 \
  --tile-width 256 --tile-height 256 --strip
