package origin_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// countedConn counts itself out of open once, however often it is closed.
type countedConn struct {
	net.Conn
	open *atomic.Int64
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

// TestReadsHoldAtMostMaxConns: however many callers read at once and however
// they give up, a client built with MaxConns holds at most that many sockets
// to S3, dialing, busy and idle together (net/http dials for a request that
// finds no idle connection, and a connection dialed for a request that then
// gives up stays in the idle pool, so without the bound an S3 hang holds more
// sockets than fetches). A reader beyond the bound waits within its
// deadline. S3() is a client with its own pool: with every read's connection
// held by a hang, its reads (the journal's check, staging) still answer.
func TestReadsHoldAtMostMaxConns(t *testing.T) {
	const maxConns, callers = 4, 24
	var open, peak atomic.Int64
	defer origin.WrapConns(func(c net.Conn) net.Conn {
		n := open.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		return &countedConn{Conn: c, open: &open}
	})()

	e := start(t)
	e.put(t, "ok", []byte("ok"), "text/plain", "")
	for i := range callers {
		e.put(t, fmt.Sprintf("hang/%d", i), []byte("held"), "text/plain", "")
	}
	e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles/hang/"), Delay: time.Hour})
	s3localtest.IsolateEnv(t)
	s3localtest.EnvCredentials(t)
	t.Setenv("AWS_ENDPOINT_URL", "")
	c, err := origin.New(context.Background(), origin.Config{
		Bucket: "tiles", Region: s3local.DefaultRegion, Endpoint: e.url, PathStyle: true, MaxConns: maxConns,
	})
	if err != nil {
		t.Fatal(err)
	}

	// held waits until the sockets open are at most n: net/http counts a
	// connection out before it closes the socket, and a connection that a
	// cancelled request leaves is closed after the request returned.
	held := func(what string, n int64) {
		t.Helper()
		for end := time.Now().Add(2 * time.Second); open.Load() > n; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: %d sockets to S3 held, want at most %d", what, open.Load(), n)
			}
		}
	}

	// Rounds of callers that all give up, as clients do behind a hung S3.
	for round := range 3 {
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				_, err := c.Get(ctxTimeout(t, 200*time.Millisecond), fmt.Sprintf("hang/%d", i), "")
				if !origin.IsTimeout(err) {
					t.Errorf("hung read: got %v, want a timeout", err)
				}
			})
		}
		wg.Wait()
		held(fmt.Sprintf("after round %d", round+1), maxConns)
	}
	// At one instant a read may dial while the socket the transport has
	// just counted out is still closing, one such overlap per connection.
	if p := peak.Load(); p > 2*maxConns {
		t.Errorf("sockets to S3 at once: %d, want at most MaxConns (%d) and the sockets closing beside them", p, maxConns)
	}

	// Every read connection held by a hang.
	reached := func() (n int) {
		for i := range maxConns {
			n += e.req.get(fmt.Sprintf("GET /tiles/hang/%d", i))
		}
		return n
	}
	before := reached()
	hung, release := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range maxConns {
		wg.Go(func() { _, _ = c.Get(hung, fmt.Sprintf("hang/%d", i), "") })
	}
	for reached() < before+maxConns {
		time.Sleep(5 * time.Millisecond) // until all of them are held at S3
	}
	out, err := c.S3().GetObject(ctxTimeout(t, 5*time.Second), &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("ok")})
	if err != nil {
		t.Fatalf("S3() with every read connection held: %v, want an answer", err)
	}
	_ = out.Body.Close()
	held("every read held by the hang", maxConns+1) // and S3()'s own connection
	ctx := ctxTimeout(t, 300*time.Millisecond)
	deadline, _ := ctx.Deadline()
	if _, err := c.Get(ctx, "ok", ""); !origin.IsTimeout(err) {
		t.Errorf("read beyond MaxConns: got %v, want a timeout waiting for a connection", err)
	}
	if late := time.Since(deadline); late > 250*time.Millisecond {
		t.Errorf("read beyond MaxConns returned %v after its deadline", late)
	}
	release()
	wg.Wait()
	if got, err := c.Get(ctxTimeout(t, 5*time.Second), "ok", ""); err != nil || string(got.Body) != "ok" {
		t.Fatalf("after the hang: got %v, %v, want the body", got, err)
	}
	held("after the hang", maxConns+1) // and S3()'s own connection
}
