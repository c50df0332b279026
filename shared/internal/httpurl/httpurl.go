// Package httpurl is the one rule for the http(s) URLs the product takes
// from its settings: endpoints and queues (Parse), and the public base URL
// that document URLs are built on (Base). Keeping it in one place keeps the
// loader that checks PUBLIC_URL and the packages that build on it agreeing.
package httpurl

import (
	"fmt"
	"net/url"
	"strings"
)

// Parse is s parsed, and ok, when s is an absolute http or https URL with a
// host; a relative URL, another scheme or text that is not a URL is not ok.
func Parse(s string) (u *url.URL, ok bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, false
	}
	return u, true
}

// Base is s without its trailing slash when s can be the base of the URLs
// written into documents: a URL Parse accepts, without a query or fragment
// (a path joined after them would be lost) and without user info (it would
// be published in every document). Otherwise it is an error that says so.
func Base(s string) (string, error) {
	u, ok := Parse(s)
	if !ok || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("base URL %q: %s", s, WantBase)
	}
	return strings.TrimSuffix(s, "/"), nil
}

// WantBase says what Base accepts, for the errors of those who check it.
const WantBase = "want an absolute http(s) URL without query, fragment or user info"
