package iiif

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is a request the package refuses. It carries the HTTP status the
// specification asks for and a short message that is safe to show the client.
// Match it with errors.As.
type Error struct {
	status int
	msg    string
	err    error
}

func (e *Error) Error() string {
	if e.err != nil {
		return "iiif: " + e.msg + ": " + e.err.Error()
	}
	return "iiif: " + e.msg
}

// Status is the HTTP status of the answer: 400, 404 or 501.
func (e *Error) Status() int { return e.status }

// Message is the public text of the answer, without the package prefix.
func (e *Error) Message() string { return e.msg }

func (e *Error) Unwrap() error { return e.err }

func badRequest(format string, args ...any) error {
	return &Error{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &Error{status: http.StatusNotFound, msg: fmt.Sprintf(format, args...)}
}

// Unsupported is a request the server cannot answer for what the image is:
// 501, with the message.
func Unsupported(format string, args ...any) error { return notImplemented(format, args...) }

func notImplemented(format string, args ...any) error {
	return &Error{status: http.StatusNotImplemented, msg: fmt.Sprintf(format, args...)}
}

// overLimits refuses a size beyond maxWidth, maxHeight or maxArea. Image API
// 3.0 (section 4.2) asks for 400; 2.1 names only 404 for "the requested size
// is greater than the limits specified" (section 7.2).
func overLimits(v Version, format string, args ...any) error {
	status := http.StatusBadRequest
	if v == V2 {
		status = http.StatusNotFound
	}
	return &Error{status: status, msg: fmt.Sprintf(format, args...)}
}

// StatusOf is the HTTP status err asks for: an *Error's own, else 500.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.status
	}
	return http.StatusInternalServerError
}
