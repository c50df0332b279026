// Command minlambda is the cold-start floor of the invocation benchmarks:
// a Go Lambda that links aws-lambda-go and nothing of tilesieve, and
// answers every function-URL invocation with a fixed 200 (as the tile
// function answers /_tilesieve/health). Build it as Lambda builds the tile
// function (CGO_ENABLED=0 GOOS=linux -tags lambda.norpc,envcreds).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/aws/aws-lambda-go/lambda"
)

var ok = []byte(`{"statusCode":200,"headers":{"Content-Type":"text/plain; charset=utf-8","Cache-Control":"no-store"},"body":"ok\n"}`)

func main() {
	lambda.Start(func(context.Context, json.RawMessage) (io.Reader, error) { return bytes.NewReader(ok), nil })
}
