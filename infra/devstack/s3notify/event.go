package s3notify

import (
	"strings"
)

// Event is an S3 event notification as S3 delivers it to a Lambda function:
// one record per notification.
type Event struct {
	Records []Record `json:"Records"`
}

// Record is one S3 event record (event version 2.1).
type Record struct {
	EventVersion      string            `json:"eventVersion"`
	EventSource       string            `json:"eventSource"`
	AWSRegion         string            `json:"awsRegion"`
	EventTime         string            `json:"eventTime"`
	EventName         string            `json:"eventName"`
	UserIdentity      Identity          `json:"userIdentity"`
	RequestParameters RequestParameters `json:"requestParameters"`
	ResponseElements  ResponseElements  `json:"responseElements"`
	S3                Entity            `json:"s3"`
}

// Identity names an AWS principal.
type Identity struct {
	PrincipalID string `json:"principalId"`
}

// RequestParameters describe the request that caused the event.
type RequestParameters struct {
	SourceIPAddress string `json:"sourceIPAddress"`
}

// ResponseElements are the request IDs of the response.
type ResponseElements struct {
	RequestID string `json:"x-amz-request-id"`
	ID2       string `json:"x-amz-id-2"`
}

// Entity is the s3 part of a record.
type Entity struct {
	SchemaVersion   string `json:"s3SchemaVersion"`
	ConfigurationID string `json:"configurationId"`
	Bucket          Bucket `json:"bucket"`
	Object          Object `json:"object"`
}

// Bucket names the bucket of a record.
type Bucket struct {
	Name          string   `json:"name"`
	OwnerIdentity Identity `json:"ownerIdentity"`
	ARN           string   `json:"arn"`
}

// Object is the object of a record. Removal events carry no size or eTag.
type Object struct {
	Key       string `json:"key"` // URL-encoded, see EncodeKey
	Size      *int64 `json:"size,omitempty"`
	ETag      string `json:"eTag,omitempty"` // without quotes
	Sequencer string `json:"sequencer"`
}

// Event names, as S3 writes them in records (without the "s3:" of the
// notification configuration).
const (
	ObjectCreatedPut                     = "ObjectCreated:Put"
	ObjectCreatedPost                    = "ObjectCreated:Post"
	ObjectCreatedCopy                    = "ObjectCreated:Copy"
	ObjectCreatedCompleteMultipartUpload = "ObjectCreated:CompleteMultipartUpload"
	ObjectRemovedDelete                  = "ObjectRemoved:Delete"
)

// EncodeKey writes an object key the way S3 notifications carry it: form
// encoding (a space is "+", a "+" is "%2B", non-ASCII is UTF-8
// percent-encoded) with "/" kept as it is. Letters, digits and "-_.*" stay
// literal, as in the form encoding S3 uses; everything else is escaped.
// url.QueryUnescape reverses it.
func EncodeKey(key string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(key) + len(key)/4)
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '*', c == '/':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
