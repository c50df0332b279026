package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

// sigtermExtension is the name of the internal extension the bootstrap
// registers (the name aws-lambda-go's WithEnableSIGTERM uses).
const sigtermExtension = "GoLangEnableSIGTERM"

// enableSIGTERM asks Lambda to send the process SIGTERM before it ends the
// execution environment, which Lambda does only for functions with an
// extension, and runs onTerm when it comes. It does what
// lambda.WithEnableSIGTERM does (register an internal extension that
// subscribes to no event, and park its event/next call), but beside init
// rather than after it: run starts it before the configuration and the
// tiers are set up and joins it (the returned func) before the runtime loop
// asks for its first invocation, so the register round trip to the runtime
// API, about 1 ms of the init phase under the emulator, overlaps that work
// instead of adding to it. Registration must be done before the first
// invocation is asked for; the join makes sure of it.
//
// api is AWS_LAMBDA_RUNTIME_API. A failed registration is returned by the
// join: the function still serves, without SIGTERM (Lambda then kills it at
// shutdown, and the last interval's metrics are lost).
func enableSIGTERM(api string, onTerm func()) (join func() error) {
	signaled := make(chan os.Signal, 1)
	signal.Notify(signaled, syscall.SIGTERM)
	go func() {
		<-signaled
		onTerm()
	}()
	done := make(chan error, 1)
	go func() { done <- registerExtension(api) }()
	return func() error { return <-done }
}

// registerExtension registers the extension with the Extensions API at api
// and parks its event/next call for the life of the process: with no event
// subscribed, it never returns.
func registerExtension(api string) error {
	hc := &http.Client{} // no timeout: event/next blocks for the process's life
	base := "http://" + api + "/2020-01-01/extension/"
	req, err := http.NewRequest(http.MethodPost, base+"register", bytes.NewReader([]byte(`{"events":[]}`)))
	if err != nil {
		return fmt.Errorf("register the SIGTERM extension: %w", err)
	}
	req.Header.Set("Lambda-Extension-Name", sigtermExtension)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("register the SIGTERM extension: %w", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Lambda-Extension-Identifier")
	if resp.StatusCode != http.StatusOK || id == "" {
		return fmt.Errorf("register the SIGTERM extension: %s (identifier %q)", resp.Status, id)
	}
	next, err := http.NewRequest(http.MethodGet, base+"event/next", nil)
	if err != nil {
		return fmt.Errorf("register the SIGTERM extension: %w", err)
	}
	next.Header.Set("Lambda-Extension-Identifier", id)
	go func() {
		if resp, err := hc.Do(next); err == nil {
			resp.Body.Close()
		}
	}()
	return nil
}
