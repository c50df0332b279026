// Package events holds sample events for each trigger of the two functions,
// shaped exactly as AWS delivers them. They serve `sam local invoke`, the
// tests (embedded through FS) and the docs.
//
// S3-side fixtures (bucket "tiles", TILES_PREFIX "tiles/"):
//
//	s3-put.json               ObjectCreated:Put; keys in the URL-encoded form S3 uses
//	                          ("+" is a space, "%2B" a plus, UTF-8 percent-encoded, "%25")
//	s3-delete.json            ObjectRemoved:Delete and ObjectRemoved:DeleteMarkerCreated
//	s3-lifecycle.json         LifecycleExpiration:Delete / :DeleteMarkerCreated and a
//	                          LifecycleTransition, which changes no bytes and is ignored
//	s3-test-event.json        the s3:TestEvent S3 sends when notifications are configured
//	s3-malformed.json         records without a key, with bad escapes, without an s3 entity
//	sqs-s3.json               an SQS batch whose bodies are S3 notifications, a TestEvent,
//	                          a stale duplicate and one malformed body
//	eventbridge-created.json  "Object Created" (EventBridge keys are NOT URL-encoded)
//	eventbridge-deleted.json  "Object Deleted" (a delete marker from DeleteObject)
//
// The function-URL fixtures (url-*.json) are requests to the tile function.
package events

import "embed"

// FS holds every fixture of this folder.
//
//go:embed *.json
var FS embed.FS
