package main

import (
	"encoding/json"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	fixtures "github.com/tilesieve/tilesieve/events"
)

// urlFixtures names the function-URL events of the fixtures.
func urlFixtures(tb testing.TB) []string {
	tb.Helper()
	names, err := fs.Glob(fixtures.FS, "url-*.json")
	if err != nil || len(names) == 0 {
		tb.Fatalf("function-URL fixtures: %v %v", names, err)
	}
	return names
}

// decodeStd decodes b as UnmarshalJSON did before decodeEvent: with
// encoding/json alone.
func decodeStd(b []byte, ev *urlEvent) error {
	type plain urlEvent
	return json.Unmarshal(b, (*plain)(ev))
}

// TestDecodeEventFixtures: every function-URL event AWS sends (the
// fixtures, as CloudFront forwards them) takes the one-pass path, and
// decodes to what encoding/json makes of it.
func TestDecodeEventFixtures(t *testing.T) {
	t.Parallel()
	for _, name := range urlFixtures(t) {
		b := fixtures.Read(t, name)
		var fast, want urlEvent
		if !decodeEvent(b, &fast) {
			t.Errorf("%s: decodeEvent left it to encoding/json", name)
			continue
		}
		if err := decodeStd(b, &want); err != nil {
			t.Fatal(err)
		}
		if fast != want {
			t.Errorf("%s:\ngot  %+v\nwant %+v", name, fast, want)
		}
		if fast.RawPath == "" || fast.RequestContext.HTTP.Method == "" {
			t.Errorf("%s: path %q method %q", name, fast.RawPath, fast.RequestContext.HTTP.Method)
		}
	}
}

// eventCases are payloads at the edges of decodeEvent: fast says whether it
// decodes them itself (else encoding/json does).
var eventCases = []struct {
	name, in string
	fast     bool
}{
	{"escaped quotes", `{"rawPath":"/a/1/2/3.png","headers":{"if-none-match":"\"abc\", W/\"d\\\\e\""}}`, true},
	{"every short escape", `{"rawPath":"/\"\\\/\b\f\n\r\t"}`, true},
	{"keys in other cases", `{"RAWPATH":"/a","Headers":{"Accept-Encoding":"gzip","IF-NONE-MATCH":"x"},"requestcontext":{"HTTP":{"METHOD":"HEAD"}}}`, true},
	{"repeated keys, last wins", `{"rawPath":"/a","rawPath":"/b","headers":{"range":"bytes=0-1"},"headers":{"origin":"https://o"}}`, true},
	{"null leaves fields", `{"rawPath":null,"headers":null,"requestContext":{"http":null,"domainName":null}}`, true},
	{"skipped values of every kind", `{"x":[1,-0.5e+3,2E-2,true,false,null,{"a":[]},"s\u00e9\n"],"cookies":["a=b"],"isBase64Encoded":false,"rawPath":"/a"}`, true},
	{"skipped keys with escapes and UTF-8", `{"requestContext":{"authorizer":{"k\"\u00e9é":"v"}},"rawPath":"/a"}`, true},
	{"whitespace", " \t\n\r{ \"rawPath\" : \"/a\" , \"headers\" : { } } \n", true},
	{"empty", `{}`, true},
	{"a \\u escape kept", `{"rawPath":"/\u0061"}`, false},
	{"UTF-8 kept", `{"rawPath":"/é"}`, false},
	{"invalid UTF-8 kept", "{\"rawPath\":\"/\xff\"}", false},
	{"key with an escape", `{"raw\u0050ath":"/a"}`, false},
	{"number for a string", `{"rawPath":5}`, false},
	{"object for a string", `{"rawPath":{}}`, false},
	{"string for an object", `{"headers":"x"}`, false},
	{"array", `[]`, false},
	{"string", `"x"`, false},
	{"null", `null`, false},
	{"trailing comma", `{"rawPath":"/a",}`, false},
	{"trailing bytes", `{"rawPath":"/a"}x`, false},
	{"control byte", "{\"rawPath\":\"/\x01\"}", false},
	{"leading zero", `{"x":01}`, false},
	{"bad number", `{"x":-}`, false},
	{"bad literal", `{"x":nul}`, false},
	{"bad escape", `{"x":"\q"}`, false},
	{"short \\u", `{"x":"\u12"}`, false},
	{"unterminated", `{"rawPath":"/a`, false},
	{"deep", `{"x":` + strings.Repeat("[", maxEventDepth+2) + strings.Repeat("]", maxEventDepth+2) + `}`, false},
}

// TestDecodeEventEdges: what decodeEvent takes it decodes as encoding/json
// does, and what it leaves, UnmarshalJSON still decodes as before (a
// non-event payload marked notEvent).
func TestDecodeEventEdges(t *testing.T) {
	t.Parallel()
	for _, c := range eventCases {
		t.Run(c.name, func(t *testing.T) {
			var fast urlEvent
			if got := decodeEvent([]byte(c.in), &fast); got != c.fast {
				t.Fatalf("decodeEvent took it: %v, want %v", got, c.fast)
			}
			var want, got urlEvent
			stdErr := decodeStd([]byte(c.in), &want)
			if c.fast && (stdErr != nil || fast != want) {
				t.Errorf("decodeEvent: %+v\nencoding/json: %+v (%v)", fast, want, stdErr)
			}
			if stdErr != nil {
				want = urlEvent{notEvent: true}
			}
			if json.Valid([]byte(c.in)) {
				if err := got.UnmarshalJSON([]byte(c.in)); err != nil || got != want {
					t.Errorf("UnmarshalJSON: %+v, %v; want %+v", got, err, want)
				}
			}
		})
	}
}

// TestUnmarshalJSONMerges: decoded into an event that holds fields, both
// paths keep what the payload does not name, as encoding/json does.
func TestUnmarshalJSONMerges(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"rawPath":"/b"}`, `{"rawPath":"/b","x":"\u00e9","headers":{"host":"/é"}}`} {
		got := urlEvent{RawQueryString: "q=1", RawPath: "/a"}
		want := got
		if err := got.UnmarshalJSON([]byte(in)); err != nil {
			t.Fatal(err)
		}
		if err := decodeStd([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: got %+v, want %+v", in, got, want)
		}
	}
}

// TestHeaderFieldNames: urlHeaders.field names the same fields as
// urlHeaders' JSON tags, in any case, and no other, so a header added to the
// struct cannot be dropped by the one-pass path.
func TestHeaderFieldNames(t *testing.T) {
	t.Parallel()
	var h urlHeaders
	v := reflect.ValueOf(&h).Elem()
	for i := range v.NumField() {
		tag := v.Type().Field(i).Tag.Get("json")
		want := v.Field(i).Addr().Interface().(*string)
		for _, key := range []string{tag, strings.ToUpper(tag)} {
			if got := h.field([]byte(key)); got != want {
				t.Errorf("field(%q) is not %s", key, v.Type().Field(i).Name)
			}
		}
	}
	for _, key := range []string{"", "x-amz-date", "accept-encodin", "accept-encoding-x", "cookie"} {
		if h.field([]byte(key)) != nil {
			t.Errorf("field(%q) names a field", key)
		}
	}
}

// FuzzDecodeEvent: whatever decodeEvent decodes, encoding/json decodes to
// the same event, and accepts.
func FuzzDecodeEvent(f *testing.F) {
	for _, name := range urlFixtures(f) {
		f.Add(fixtures.Read(f, name))
	}
	for _, c := range eventCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast urlEvent
		if !decodeEvent(b, &fast) {
			return
		}
		var want urlEvent
		if err := decodeStd(b, &want); err != nil {
			t.Fatalf("decodeEvent took %q, which encoding/json refuses: %v", b, err)
		}
		if fast != want {
			t.Fatalf("%q:\ndecodeEvent   %+v\nencoding/json %+v", b, fast, want)
		}
	})
}
