package tileserver

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestResponseReset: reset leaves a pooled Response as a new one, whatever
// fields it gains: every field is set here (the test fails on a field it
// does not set), then reset.
func TestResponseReset(t *testing.T) {
	t.Parallel()
	r := &Response{
		Status: 200, Body: []byte("x"), Stream: io.NopCloser(strings.NewReader("")), Admin: true,
		extra: &prepared{}, timing: "memory;dur=0.001", elapsed: time.Millisecond, origin: "https://a.example",
	}
	r.set("X-Cache", xCacheValues[srcMemory])
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("field %s is not set by this test: set it, and clear it in reset", v.Type().Field(i).Name)
		}
	}
	r.reset()
	if !reflect.DeepEqual(*r, Response{}) {
		t.Fatalf("reset left %+v", *r)
	}
}
