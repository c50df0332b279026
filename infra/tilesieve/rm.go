package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func rmCommand() command {
	return command{
		name:    "rm",
		args:    "s3://bucket/KEY...",
		nargs:   -1,
		summary: "Delete objects (a tile, an archive); the sync worker purges them as it purges an upload.",
		about: `Deletes each object named, one key each (no prefixes, no wildcards),
and prints a line per object deleted. S3 answers a deletion of a key
that is not there as a success, so such a key is reported as deleted
too. All URLs are read before anything is deleted. Exit 0: all deleted;
1: a deletion failed; 2: bad usage.
`,
		setup: func(*flag.FlagSet) func(context.Context, []string, cmdIO) int { return runRm },
	}
}

// object is one s3://bucket/KEY.
type object struct{ bucket, key string }

func (o object) String() string { return "s3://" + o.bucket + "/" + o.key }

func runRm(ctx context.Context, args []string, c cmdIO) int {
	objs := make([]object, 0, len(args))
	for _, a := range args {
		o, err := parseObjectURL(a)
		if err != nil {
			fmt.Fprintln(c.stderr, "tilesieve: rm:", err)
			return 2
		}
		objs = append(objs, o)
	}
	clients := map[string]*s3.Client{}
	code := 0
	for _, o := range objs {
		client := clients[o.bucket]
		if client == nil {
			oc, failed := s3Client(ctx, c, o.bucket)
			if failed != 0 {
				return failed
			}
			client = oc.S3()
			clients[o.bucket] = client
		}
		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(o.bucket), Key: aws.String(o.key)}); err != nil {
			fmt.Fprintf(c.stderr, "tilesieve: rm: %s: %v\n", o, err)
			code = 1
			continue
		}
		fmt.Fprintf(c.stdout, "%s: deleted\n", o)
	}
	return code
}

// parseObjectURL reads s3://bucket/KEY; KEY is not empty and names one
// object, not a prefix.
func parseObjectURL(s string) (object, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return object{}, fmt.Errorf("%q: want s3://bucket/KEY", s)
	}
	key := strings.TrimPrefix(u.Path, "/")
	switch {
	case key == "":
		return object{}, fmt.Errorf("%q: no KEY after the bucket", s)
	case strings.HasSuffix(key, "/"):
		return object{}, fmt.Errorf("%q: a prefix, not a key: rm deletes single objects", s)
	}
	return object{bucket: u.Host, key: key}, nil
}
