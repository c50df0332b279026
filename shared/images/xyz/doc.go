// Package xyz serves a georeferenced, tiled, pyramidal raster (a Cloud
// Optimized GeoTIFF in EPSG:3857, EPSG:4326 or a WGS 84 UTM zone) as XYZ web
// map tiles: the Google/OSM tiling of web mercator, /{z}/{x}/{y}.
//
// It owns the geometry and the pixels, and no I/O. New checks a Raster
// description and derives the tileset's metadata and which of its levels lie
// on the XYZ grid. Plan says, for one XYZ tile, whether it is a stored tile
// to be served as it is (the passthrough), outside the data (a missing tile),
// or which stored tiles of which level to read. RenderImage and RenderFloat
// read those through a TileSource and resample them bilinearly into the XYZ
// tile; package terrain encodes a rendered elevation tile as terrain-RGB or
// Terrarium.
//
// It promises: a level is treated as aligned with the XYZ grid only when its
// geotransform says so (the file's tiling metadata is a hint); a resampled
// tile reads at most Config.MaxReadTiles stored tiles and Config.MaxReadPixels
// pixels, and nothing allocates in proportion to what a raster claims;
// pixels outside the data, under the mask or at the nodata value are
// transparent (NaN in a float tile), with gdalwarp's rule at the edges: no
// data where the source pixel under the centre has none, else the mean of
// the neighbours that have data, so no data never bleeds into colour; no
// input panics.
package xyz
