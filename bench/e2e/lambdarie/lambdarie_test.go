package lambdarie

import (
	"encoding/json"
	"testing"
)

func TestCheckMemoryHit(t *testing.T) {
	t.Parallel()
	ok := `{"statusCode":200,"headers":{"X-Cache":"HIT-MEMORY","Content-Length":"30720"},"body":"","isBase64Encoded":true}`
	if err := CheckMemoryHit([]byte(ok), 30<<10); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{"statusCode":200,"headers":{"X-Cache":"MISS","Content-Length":"30720"}}`, `{"statusCode":404}`, `not json`} {
		if err := CheckMemoryHit([]byte(bad), 30<<10); err == nil {
			t.Errorf("CheckMemoryHit(%s) accepted", bad)
		}
	}
}

func TestWithPath(t *testing.T) {
	t.Parallel()
	got, err := WithPath([]byte(`{"version":"2.0","rawPath":"/a.png","headers":{"host":"x"}}`), "/bench/30KB.png")
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(got, &ev); err != nil {
		t.Fatal(err)
	}
	if ev["rawPath"] != "/bench/30KB.png" || ev["version"] != "2.0" || ev["headers"].(map[string]any)["host"] != "x" {
		t.Errorf("got %s, want the template with rawPath /bench/30KB.png", got)
	}
	if _, err := WithPath([]byte(`not json`), "/x"); err == nil {
		t.Error("WithPath accepted a template that is not JSON")
	}
}
