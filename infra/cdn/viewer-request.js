// Viewer-request function of the tilesieve distribution (cloudfront-js-2.0).
// The tile function names the host a document (TileJSON, IIIF info.json, the
// catalog) was asked through from X-Forwarded-Host; CloudFront forwards a
// viewer-sent one untouched and keeps it out of the cache key, so it is set
// here from the Host the viewer reached, whatever the viewer sent. The
// viewer protocol policy redirects http to https, so the protocol is https.
function handler(event) {
  var request = event.request;
  var host = request.headers.host ? request.headers.host.value : event.context.distributionDomainName;
  request.headers['x-forwarded-host'] = { value: host };
  request.headers['x-forwarded-proto'] = { value: 'https' };
  return request;
}
