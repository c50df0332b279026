package iiif

import (
	"strconv"
	"strings"
)

// Numbers in a request are what both specifications allow and nothing more:
// pixel values are decimal digits only; percentages and rotations are decimal
// digits with at most one ".", so no sign, space, exponent, "inf" or "nan".
// Leading zeros are accepted ("007" is 7): they change nothing once the
// request is in its canonical form.
const (
	// maxIntDigits keeps a pixel value below 10^15, far past any image and
	// small enough that sums of two values never overflow an int64.
	maxIntDigits = 15
	// maxFloatLen bounds a decimal's length; its value then stays below 10^32.
	maxFloatLen = 32
)

// parseInt reads a non-negative integer. ok is false if s is not one;
// tooBig is true if it is one with more than maxIntDigits significant digits.
func parseInt(s string) (n int64, ok, tooBig bool) {
	if s == "" {
		return 0, false, false
	}
	digits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false, false
		}
		if digits > 0 || c != '0' {
			digits++
		}
		if digits > maxIntDigits {
			return 0, true, true
		}
		n = n*10 + int64(c-'0')
	}
	return n, true, false
}

// parseFloat reads a non-negative decimal: digits with at most one ".", and
// at least one digit (".5" and "5." are accepted, as the specifications only
// recommend the leading zero).
func parseFloat(s string) (float64, bool) {
	if s == "" || len(s) > maxFloatLen {
		return 0, false
	}
	digits, dots := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return 0, false
		}
	}
	if digits == 0 || dots > 1 {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// split4 cuts "a,b,c,d" into its four parts without allocating.
func split4(s string) (parts [4]string, ok bool) {
	for i := 0; i < 3; i++ {
		var found bool
		parts[i], s, found = strings.Cut(s, ",")
		if !found {
			return parts, false
		}
	}
	parts[3] = s
	return parts, !strings.Contains(s, ",")
}
