package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestLocalHandler: the local server's handler answers a panic with a 500
// and hands the handler the request's own context, its deadline (if a
// caller set one) not shortened by the margin kept back on Lambda.
func TestLocalHandler(t *testing.T) {
	t.Parallel()
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		want int
	}{
		{"panic", func(http.ResponseWriter, *http.Request) { panic("boom") }, http.StatusInternalServerError},
		{"context", func(w http.ResponseWriter, r *http.Request) {
			if r.Context() != ctx {
				t.Errorf("the handler got another context than the request's")
			}
			if got, _ := r.Context().Deadline(); !got.Equal(deadline) {
				t.Errorf("deadline %v, want %v", got, deadline)
			}
			w.WriteHeader(http.StatusNoContent)
		}, http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			localHandler(tc.h, slog.New(slog.DiscardHandler)).ServeHTTP(rec, httptest.NewRequest("GET", "/x.png", nil).WithContext(ctx))
			if rec.Code != tc.want {
				t.Errorf("got %d, want %d", rec.Code, tc.want)
			}
		})
	}
}
