package pooled

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestBuildPooled: a payload built in a pooled buffer is, byte for byte,
// what encoding/json writes for the same response.
func TestBuildPooled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body []byte
		text bool
	}{
		{"binary", []byte{0, 1, 2, 0xff, 0xfe}, false},
		{"text", []byte(`{"a":"<b>&\u2028 é"}` + "\n\t"), true},
		{"empty", nil, false},
	} {
		want := events.LambdaFunctionURLResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "x/y", "Etag": `"e"`}}
		stub, _ := json.Marshal(want)
		switch {
		case tc.text:
			want.Body = string(tc.body)
		case len(tc.body) > 0:
			want.Body, want.IsBase64Encoded = encodeStd(tc.body), true
		}
		wantJSON, _ := json.Marshal(want)
		p := Build(stub, tc.body, tc.text)
		got, err := io.ReadAll(p)
		p.Close()
		if err != nil || !bytes.Equal(got, wantJSON) {
			t.Errorf("%s: got %s, want %s", tc.name, got, wantJSON)
		}
	}
}

func encodeStd(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
