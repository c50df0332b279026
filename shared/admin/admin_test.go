package admin

import "testing"

func TestBearerToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"Bearer tok", "tok"},
		{"bearer tok", "tok"},
		{"BEARER   tok", "tok"},
		{"tok", ""},       // no scheme: not a token
		{"Basic tok", ""}, // another scheme
		{"Bearer", ""},
		{"", ""},
	} {
		if got := bearerToken(tc.in); got != tc.want {
			t.Errorf("bearerToken(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}
