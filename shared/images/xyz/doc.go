// Package xyz serves a georeferenced, tiled, pyramidal raster (a Cloud
// Optimized GeoTIFF in EPSG:3857, EPSG:4326 or a WGS 84 UTM zone) as XYZ web
// map tiles: the Google/OSM tiling of web mercator, /{z}/{x}/{y}.
//
// It owns the geometry and the pixels, and no I/O: New checks a Raster
// description and derives the tileset's metadata and which of its levels lie
// on the XYZ grid; Plan says, for one XYZ tile, whether it is a stored tile
// to be served as it is (the passthrough), outside the data (a missing tile),
// or which stored tiles of which level to read; RenderImage and RenderFloat
// read them through a TileSource and resample them into the XYZ tile;
// TerrainRGB and Terrarium encode elevations as PNG-ready pixels.
//
// It promises: a level is only treated as aligned with the XYZ grid when its
// geotransform says so (names in the file's metadata are hints); a resampled
// tile never reads more than Config.MaxReadTiles stored tiles nor allocates in
// proportion to what a raster claims; pixels outside the data, under the mask
// or at the nodata value are transparent (NaN for float rasters) and never
// bleed colour into their neighbours; no input panics.
package xyz
