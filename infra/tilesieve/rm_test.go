package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// TestRmCommand deletes objects as the banner of make run does, and
// refuses what is not one object before deleting anything.
func TestRmCommand(t *testing.T) {
	ep := s3localtest.Start(t, "tiles")
	env := localEnv(t, ep)
	getenv := func(k string) string { return env[k] }
	for _, k := range []string{"tiles/demo/2/1/1.png", "tiles/demo/2/1/2.png", "tiles/keep.png"} {
		s3localtest.Put(t, ep.Client, "tiles", k, []byte("png"), "image/png", "")
	}
	for _, c := range []struct {
		name        string
		args        []string
		code        int
		out, errOut string
	}{
		{"one", []string{"rm", "s3://tiles/tiles/demo/2/1/1.png"}, 0, "s3://tiles/tiles/demo/2/1/1.png: deleted\n", ""},
		{"bad URL first", []string{"rm", "s3://tiles/tiles/demo/2/1/2.png", "s3://tiles/tiles/demo/"}, 2, "",
			"tilesieve: rm: \"s3://tiles/tiles/demo/\": a prefix, not a key: rm deletes single objects\n"},
		{"no key", []string{"rm", "s3://tiles"}, 2, "", "no KEY after the bucket"},
		{"not s3", []string{"rm", "https://tiles/k"}, 2, "", "want s3://bucket/KEY"},
		{"two", []string{"rm", "s3://tiles/tiles/demo/2/1/2.png", "s3://tiles/tiles/demo/2/1/1.png"}, 0,
			"s3://tiles/tiles/demo/2/1/2.png: deleted\ns3://tiles/tiles/demo/2/1/1.png: deleted\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), c.args, getenv, &out, &errOut)
			if code != c.code || out.String() != c.out || !strings.Contains(errOut.String(), c.errOut) || c.errOut == "" && errOut.Len() > 0 {
				t.Errorf("got code %d, stdout %q, stderr %q; want %d, %q, %q", code, out.String(), errOut.String(), c.code, c.out, c.errOut)
			}
		})
	}
	list, err := ep.Client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("tiles")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Contents) != 1 || aws.ToString(list.Contents[0].Key) != "tiles/keep.png" {
		t.Errorf("left %d objects, want tiles/keep.png alone", len(list.Contents))
	}
}
