// Viewer-request function of the tilesieve distribution (cloudfront-js-2.0).
// The tile function names the host a document (TileJSON, IIIF info.json, the
// catalog) was asked through from X-Forwarded-Host; CloudFront forwards a
// viewer-sent one untouched and keeps it out of the cache key, so it is set
// here from the Host the viewer reached, whatever the viewer sent.
// X-Forwarded-Proto is not set: the tile function ignores it and takes
// https for a host the CDN forwarded (viewers are redirected to https), so
// a viewer-sent one changes nothing.
function handler(event) {
  var request = event.request;
  var host = request.headers.host ? request.headers.host.value : event.context.distributionDomainName;
  request.headers['x-forwarded-host'] = { value: host };
  return request;
}
