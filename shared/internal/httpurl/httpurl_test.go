package httpurl

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"https://s3.eu-west-1.amazonaws.com", true},
		{"http://127.0.0.1:4566/000000000000/events", true},
		{"https://h/path?q=1#f", true},
		{"", false},
		{"/relative", false},
		{"s3.amazonaws.com", false},
		{"ftp://h", false},
		{"https://", false},
		{"https://h/%zz", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			u, ok := Parse(tc.in)
			if ok != tc.ok || (ok && u.String() != tc.in) {
				t.Errorf("got %v, %v; want ok %v", u, ok, tc.ok)
			}
		})
	}
}

func TestBase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"https://tiles.example.com", "https://tiles.example.com", true},
		{"https://tiles.example.com/", "https://tiles.example.com", true},
		{"http://127.0.0.1:8080/maps/", "http://127.0.0.1:8080/maps", true},
		{"https://h?x=1", "", false},
		{"https://h?", "", false},
		{"https://h#top", "", false},
		{"https://user:secret@h", "", false},
		{"https://user@h", "", false},
		{"/relative", "", false},
		{"ftp://h", "", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := Base(tc.in)
			if got != tc.want || (err == nil) != tc.ok {
				t.Errorf("got %q, %v; want %q, ok %v", got, err, tc.want, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), WantBase) {
				t.Errorf("error %q does not say what is wanted", err)
			}
		})
	}
}
