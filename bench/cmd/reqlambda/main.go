// Command reqlambda is the cold-start floor the project's required packages
// set: a Go Lambda that links aws-lambda-go and the S3 client every
// tilesieve function must speak through (aws-sdk-go-v2's service/s3),
// builds the client at start as a function does, and
// answers every function-URL invocation with a fixed 200, as minlambda
// does. Between minlambda and it lies what those packages alone cost a cold
// start (their package initialisers: the S3 endpoint tables, SigV4a's
// curve); between it and the tile function, what tilesieve adds. Build it as
// Lambda builds the tile function (CGO_ENABLED=0 GOOS=linux -tags
// lambda.norpc,envcreds).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

var ok = []byte(`{"statusCode":200,"headers":{"Content-Type":"text/plain; charset=utf-8","Cache-Control":"no-store"},"body":"ok\n"}`)

func main() {
	client := s3.New(s3.Options{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}})
	lambda.Start(func(ctx context.Context, ev json.RawMessage) (io.Reader, error) {
		if len(ev) == 0 { // never (every invocation has an event): keeps the client's calls linked
			_, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("health")})
			return nil, err
		}
		return bytes.NewReader(ok), nil
	})
}
