// Package iiif rewrites the identity of static IIIF Image API level 0
// pyramids: an info.json cut for one base URL names the image by that URL,
// so served from anywhere else (the CDN, a function URL, a local run) its
// tiles would be fetched from the wrong place. RewriteID points the info.json
// at the URL the image is actually served from, as serverless-iiif does, and
// leaves every other byte as it was.
package iiif

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/tilesieve/tilesieve/shared/internal/httpurl"
	"github.com/tilesieve/tilesieve/shared/internal/jsonspan"
)

// ErrInfo is input that is not an info.json this package can rewrite: not a
// JSON object, too large, or with an id that is not a string.
var ErrInfo = errors.New("iiif: not a usable info.json")

// MaxInfoBytes caps the info.json RewriteID reads; real ones are a few KiB.
const MaxInfoBytes = 1 << 20

// Contexts of the Image API versions.
const (
	ContextV3 = "http://iiif.io/api/image/3/context.json"
	ContextV2 = "http://iiif.io/api/image/2/context.json"
	contextV1 = "http://library.stanford.edu/iiif/image-api/1.1/context.json"
)

// InfoName is the file name of an image's description.
const InfoName = "info.json"

// ImageID is the public id of the image whose info.json has tile key
// infoKey ("books/b1/p7/info.json"), served under baseURL
// ("https://d1.cloudfront.net"): "https://d1.cloudfront.net/books/b1/p7".
func ImageID(baseURL, infoKey string) (string, error) {
	base, err := httpurl.Base(baseURL)
	if err != nil {
		return "", fmt.Errorf("iiif: %w", err)
	}
	prefix, ok := strings.CutSuffix(infoKey, "/"+InfoName)
	if !ok || prefix == "" || strings.HasPrefix(prefix, "/") {
		return "", fmt.Errorf("iiif: key %q is not NAME/%s", infoKey, InfoName)
	}
	segs := strings.Split(prefix, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return base + "/" + strings.Join(segs, "/"), nil
}

// RewriteID returns info with its image id set to id: "id" for Image API 3
// (@context ContextV3), "@id" for 2 and 1.1. Without a known context the key
// the document already has is used. A missing id is inserted first in the
// object. Every other byte is kept, so the answer differs from the stored
// object only in the id's value.
func RewriteID(info []byte, id string) ([]byte, error) {
	if len(info) > MaxInfoBytes {
		return nil, fmt.Errorf("iiif: info.json of %d bytes, more than %d: %w", len(info), MaxInfoBytes, ErrInfo)
	}
	members, err := topLevel(info)
	if err != nil {
		return nil, err
	}
	key, err := idKey(info, members)
	if err != nil {
		return nil, err
	}
	val, err := jsonString(strings.TrimSuffix(id, "/"))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(info) + len(val))
	last, found := 0, false
	for _, m := range members {
		if m.Key != key {
			continue
		}
		if info[m.Start] != '"' {
			return nil, fmt.Errorf("iiif: %q is not a string: %w", key, ErrInfo)
		}
		out.Write(info[last:m.Start])
		out.Write(val)
		last, found = m.End, true
	}
	if found {
		out.Write(info[last:])
		return out.Bytes(), nil
	}
	// No id: insert it right after the opening brace.
	open := bytes.IndexByte(info, '{') + 1
	out.Write(info[:open])
	k, _ := jsonString(key)
	out.Write(k)
	out.WriteByte(':')
	out.Write(val)
	if len(members) > 0 {
		out.WriteByte(',')
	}
	out.Write(info[open:])
	return out.Bytes(), nil
}

// member is one top-level member: its key and its value's byte span.
type member = jsonspan.Span

func topLevel(info []byte) ([]member, error) {
	ms, err := jsonspan.Members(info, 0)
	if err != nil {
		return nil, fmt.Errorf("iiif: %w: %w", err, ErrInfo)
	}
	return ms, nil
}

// idKey chooses "id" or "@id" from the @context, else from what the
// document has.
func idKey(info []byte, ms []member) (string, error) {
	has := map[string]bool{}
	for _, m := range ms {
		has[m.Key] = true
		if m.Key != "@context" {
			continue
		}
		var ctxs []string
		var one string
		raw := info[m.Start:m.End]
		if json.Unmarshal(raw, &one) == nil {
			ctxs = []string{one}
		} else {
			var list []any
			_ = json.Unmarshal(raw, &list)
			for _, v := range list {
				if s, ok := v.(string); ok {
					ctxs = append(ctxs, s)
				}
			}
		}
		for _, c := range ctxs {
			switch c {
			case ContextV3:
				return "id", nil
			case ContextV2, contextV1:
				return "@id", nil
			}
		}
	}
	switch {
	case has["@id"]:
		return "@id", nil
	case has["id"]:
		return "id", nil
	}
	return "", fmt.Errorf("iiif: no IIIF Image API @context and no id: %w", ErrInfo)
}

func jsonString(s string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("iiif: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
