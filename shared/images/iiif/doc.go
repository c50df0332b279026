// Package iiif answers IIIF Image API 3.0 and 2.1 requests at compliance
// level 2 for images stored as pyramids of tiles, between the HTTP layer
// (routing, caching, storage) and the image reader (levels of decoded
// tiles). It is transport-free and knows no storage.
//
// A request goes through four steps, each usable alone:
//
//   - Parse reads the four path parameters (region, size, rotation,
//     quality.format) exactly as each version's syntax allows.
//   - Resolve decides what they ask of one Image under Limits: the region
//     in full-resolution pixels, the size, rotation, quality and format, and
//     the request's canonical form, under which answers can be cached (equal
//     canonical forms give equal bytes).
//   - NewPlan picks the level to read and the stored tiles that cover the
//     region, reports the pixels decoding them costs, and detects a request
//     that is exactly one stored tile at its own size (Plan.Match), which
//     the caller can answer with the stored bytes.
//   - Renderer.Render makes the answer from decoded tiles with the
//     shared/images/pixel pipeline.
//
// Package shared/images/iiifinfo writes what the service says about an
// image (info.json, a manifest) and the HTTP layer's headers. Level 2 also
// asks that layer for CORS, a 303 from the base URI to info.json, and the
// JSON-LD media type on request.
//
// Every refusal the specifications define is an *Error carrying its HTTP
// status (400, 404 or 501) and a short public message. Each version's
// wording is followed where they differ: sizes past the limits are 400 in
// 3.0 and 404 in 2.1; upscaling needs "^" in 3.0 and is allowed in 2.1.
// Rotations other than multiples of 90 degrees are 501 (not implemented).
package iiif
