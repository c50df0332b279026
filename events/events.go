// Package fixtures (folder events/) holds sample events for each trigger of the two functions,
// shaped exactly as AWS delivers them. They serve `sam local invoke`, the
// tests (embedded through FS) and the docs.
//
// S3-side fixtures (bucket "tiles", TILES_PREFIX "tiles/"). S3 sends one
// record per notification, so every s3-*.json holds one; batches of them
// arrive only through SQS:
//
//	s3-put.json                  ObjectCreated:Put; the key in the URL-encoded form S3
//	                             uses ("+" is a space, "%2B" a plus, "%25" a percent)
//	s3-delete.json               ObjectRemoved:Delete
//	s3-delete-marker.json        ObjectRemoved:DeleteMarkerCreated (a versioned bucket)
//	s3-lifecycle.json            LifecycleExpiration:Delete
//	s3-lifecycle-transition.json LifecycleTransition, which changes no bytes and is ignored
//	s3-test-event.json           the s3:TestEvent S3 sends when notifications are configured
//	s3-malformed.json            a record whose key is not a valid escape ("%ZZ")
//	sqs-s3.json                  an SQS batch as the event source mapping delivers it: 16
//	                             messages, each body one single-record S3 notification (a
//	                             JSON string), with UTF-8 and reserved characters, a
//	                             TestEvent, a truncated body, a record without a key, a
//	                             stale duplicate, keys outside TILES_PREFIX and the
//	                             journal's own head object
//	eventbridge-created.json     "Object Created" (EventBridge keys are NOT URL-encoded)
//	eventbridge-deleted.json     "Object Deleted" (a delete marker from DeleteObject)
//	sqs-eventbridge.json         an SQS batch as the event source mapping delivers what an
//	                             EventBridge rule sent to the queue (ExistingBucket): each
//	                             body one EventBridge event (bucket "my-maps"), an "Object
//	                             Created", a lifecycle "Object Deleted" and a key with a
//	                             space, which EventBridge does not URL-encode
//
// The function-URL fixtures (url-*.json) are requests to the tile function.
package fixtures

import (
	"embed"
	"testing"
)

// FS holds every fixture of this folder.
//
//go:embed *.json
var FS embed.FS

// Read is the fixture name; a name FS does not hold fails the test.
func Read(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := FS.ReadFile(name)
	if err != nil {
		tb.Fatalf("fixtures: %v", err)
	}
	return b
}
