// Runs viewer-request.js under Node with CloudFront's viewer-request event
// shape (cloudfront-js-2.0): the viewer's Host wins, a viewer-sent forwarded
// host is overwritten, nothing else of the request changes. Exits non-zero
// when a case fails.
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const src = fs.readFileSync(path.join(__dirname, 'viewer-request.js'), 'utf8');
const sandbox = {};
vm.runInNewContext(src, sandbox);
const handler = sandbox.handler;

function event(headers) {
  return {
    version: '1.0',
    context: {
      distributionDomainName: 'd111111abcdef8.cloudfront.net',
      distributionId: 'EDFDVBD6EXAMPLE',
      eventType: 'viewer-request',
      requestId: '4TyzHTaYWb1GX1qTfsHhEqV6HUDd_BzoBZnwfnvQc_1oF26ClkoUSEQ==',
    },
    viewer: { ip: '198.51.100.11' },
    request: { method: 'GET', uri: '/osm.json', querystring: {}, headers: headers, cookies: {} },
  };
}

const cases = [
  {
    name: 'viewer Host becomes the forwarded host',
    headers: { host: { value: 'd111111abcdef8.cloudfront.net' } },
    host: 'd111111abcdef8.cloudfront.net',
  },
  {
    name: 'a viewer-sent forwarded host is overwritten',
    headers: {
      host: { value: 'tiles.example.com' },
      'x-forwarded-host': { value: 'evil.example' },
    },
    host: 'tiles.example.com',
  },
  {
    name: 'a multi-valued forwarded host is overwritten whole',
    headers: {
      host: { value: 'tiles.example.com' },
      'x-forwarded-host': { value: 'evil.example', multiValue: [{ value: 'evil.example' }, { value: 'evil2.example' }] },
    },
    host: 'tiles.example.com',
  },
  {
    name: 'no Host: the distribution domain',
    headers: { 'x-forwarded-host': { value: 'evil.example' } },
    host: 'd111111abcdef8.cloudfront.net',
  },
];

let failed = 0;
for (const c of cases) {
  const req = handler(event(JSON.parse(JSON.stringify(c.headers))));
  // Every header but x-forwarded-host as the viewer sent it.
  const others = Object.assign({}, c.headers);
  delete others['x-forwarded-host'];
  const gotOthers = Object.assign({}, req.headers);
  delete gotOthers['x-forwarded-host'];
  const got = JSON.stringify({ host: req.headers['x-forwarded-host'], others: gotOthers, uri: req.uri, method: req.method });
  const want = JSON.stringify({ host: { value: c.host }, others: others, uri: '/osm.json', method: 'GET' });
  if (got !== want) {
    failed++;
    console.log(`FAIL ${c.name}: got ${got}, want ${want}`);
  } else {
    console.log(`ok   ${c.name}`);
  }
}
process.exit(failed ? 1 : 0);
