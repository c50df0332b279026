package queue_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/queue"
	"github.com/tilesieve/tilesieve/shared/purge/s3event"
)

// sqsStandIn answers SendMessage as SQS does (AWS JSON 1.0), keeping the
// bodies. Its first answers are failures with the statuses in fail (500 and
// 503: an internal error, 400: a queue that does not exist, 429: throttled),
// then it takes every message; badMD5 answers with another body's digest.
type sqsStandIn struct {
	mu       sync.Mutex // guards sent, requests and fail
	sent     []sentMessage
	requests int
	fail     []int
	badMD5   bool
}

type sentMessage struct{ Queue, Body, Target, Auth, Token, ContentType string }

var sqsFailures = map[int]string{
	http.StatusBadRequest:          `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}`,
	http.StatusTooManyRequests:     `{"__type":"com.amazonaws.sqs#ThrottlingException","message":"Rate exceeded"}`,
	http.StatusInternalServerError: `{"__type":"com.amazonaws.sqs#InternalError","message":"internal error"}`,
	http.StatusServiceUnavailable:  `{"__type":"com.amazonaws.sqs#ServiceUnavailable","message":"try again"}`,
}

func (s *sqsStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct{ QueueUrl, MessageBody string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if len(s.fail) > 0 {
		status := s.fail[0]
		s.fail = s.fail[1:]
		w.WriteHeader(status)
		w.Write([]byte(sqsFailures[status]))
		return
	}
	s.sent = append(s.sent, sentMessage{in.QueueUrl, in.MessageBody, r.Header.Get("X-Amz-Target"), r.Header.Get("Authorization"),
		r.Header.Get("X-Amz-Security-Token"), r.Header.Get("Content-Type")})
	body := in.MessageBody
	if s.badMD5 {
		body += "x"
	}
	sum := md5.Sum([]byte(body))
	json.NewEncoder(w).Encode(map[string]string{"MessageId": "m-1", "MD5OfMessageBody": hex.EncodeToString(sum[:])})
}

// TestQueueHandoff: an admin purge's invalidation goes to the worker's queue
// as one signed SendMessage in SQS's JSON protocol whose body the worker's
// decoder recognises. Throttling, 5xx answers and a wrong MD5OfMessageBody
// are retried within the attempts; a refusal (no such queue) is not, and a
// send that fails is an error of the queue package carrying SQS's code.
func TestQueueHandoff(t *testing.T) {
	t.Parallel()
	const queueURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/tilesieve-TileEventsQueue"
	inv := purge.Invalidation{Targets: []string{"osm.json*", "osm/"}, BatchID: "admin:osm/:1", Seq: 4, Source: "admin"}
	for _, tt := range []struct {
		name         string
		fail         []int
		badMD5       bool
		attempts     int
		token        string
		wantRequests int
		wantErr      string // "" : the message is taken
	}{
		{name: "sent", wantRequests: 1},
		{name: "session token signed", token: "session-token", wantRequests: 1},
		{name: "throttled, then sent", fail: []int{http.StatusTooManyRequests}, wantRequests: 2},
		{name: "5xx twice, then sent", fail: []int{http.StatusInternalServerError, http.StatusServiceUnavailable}, wantRequests: 3},
		{name: "5xx past the attempts", fail: []int{500, 500, 500, 500}, wantRequests: 3, wantErr: "InternalError"},
		{name: "one attempt", fail: []int{503}, attempts: 1, wantRequests: 1, wantErr: "ServiceUnavailable"},
		{name: "no such queue: not retried", fail: []int{http.StatusBadRequest}, wantRequests: 1, wantErr: "QueueDoesNotExist"},
		{name: "wrong MD5 of the body", badMD5: true, attempts: 2, wantRequests: 2, wantErr: "MD5OfMessageBody"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stand := &sqsStandIn{fail: tt.fail, badMD5: tt.badMD5}
			hs := httptest.NewServer(stand)
			t.Cleanup(hs.Close)
			h, err := queue.NewHandoff(context.Background(), queueURL, awsclient.Settings{
				Region: "eu-west-1", BaseEndpoint: hs.URL, RetryMaxAttempts: tt.attempts,
				Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", tt.token),
			})
			if err != nil {
				t.Fatal(err)
			}
			err = h.Hand(context.Background(), inv)
			stand.mu.Lock()
			sent, requests := slices.Clone(stand.sent), stand.requests
			stand.mu.Unlock()
			if requests != tt.wantRequests {
				t.Errorf("got %d requests, want %d", requests, tt.wantRequests)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), "queue: ") || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("got %v, want the queue package's error carrying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(sent) != 1 {
				t.Fatalf("sent %d messages, want 1", len(sent))
			}
			m := sent[0]
			if m.Queue != queueURL || m.Target != "AmazonSQS.SendMessage" || m.ContentType != "application/x-amz-json-1.0" ||
				!strings.HasPrefix(m.Auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(m.Auth, "/eu-west-1/sqs/aws4_request") {
				t.Errorf("request %+v: want a SendMessage to %s signed for sqs in eu-west-1", m, queueURL)
			}
			if m.Token != tt.token || (tt.token != "" && !strings.Contains(m.Auth, "x-amz-security-token")) {
				t.Errorf("security token %q (auth %s), want %q, signed", m.Token, m.Auth, tt.token)
			}
			// The worker's queue delivers it; its decoder finds the invalidation.
			raw, _ := json.Marshal(map[string]any{"Records": []any{map[string]string{"eventSource": "aws:sqs", "messageId": "m-1", "body": m.Body}}})
			b, err := s3event.Decode(raw)
			if err != nil || len(b.Messages) != 1 {
				t.Fatalf("decoded %+v, %v: want one message", b, err)
			}
			got, err := purge.DecodeInvalidation(b.Messages[0].Kind, b.Messages[0].Body)
			if err != nil || !slices.Equal(got.Targets, inv.Targets) || got.BatchID != inv.BatchID || got.Seq != inv.Seq {
				t.Errorf("worker got %+v, %v; want %+v", got, err, inv)
			}
		})
	}
}

// TestQueueHandoffEndpoint: without an endpoint override the request goes
// to the queue URL's own host, SQS's regional endpoint; a queue URL that is
// not one is refused at init.
func TestQueueHandoffEndpoint(t *testing.T) {
	t.Parallel()
	stand := &sqsStandIn{}
	hs := httptest.NewServer(stand)
	t.Cleanup(hs.Close)
	queueURL := hs.URL + "/123456789012/q"
	h, err := queue.NewHandoff(context.Background(), queueURL, awsclient.Settings{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Hand(context.Background(), purge.Invalidation{Targets: []string{"osm/"}, BatchID: "b"}); err != nil {
		t.Fatal(err)
	}
	if len(stand.sent) != 1 || stand.sent[0].Queue != queueURL {
		t.Errorf("got %+v, want one message for %s", stand.sent, queueURL)
	}
	for _, bad := range []string{"", "sqs.us-east-1.amazonaws.com/1/q", "ftp://h/q", "https:///q"} {
		if _, err := queue.NewHandoff(context.Background(), bad, awsclient.Settings{Region: "us-east-1",
			Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")}); err == nil || !strings.HasPrefix(err.Error(), "queue: ") {
			t.Errorf("queue URL %q: got %v, want the queue package's error", bad, err)
		}
	}
}

// TestQueueHandoffEndpointFromEnvironment: the message goes where the AWS SDKs
// would send an SQS call: an endpoint set in code first, then
// AWS_ENDPOINT_URL_SQS before AWS_ENDPOINT_URL, both ignored when
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true, and else the queue URL's own
// host. Each endpoint is a stand-in of its own, so the one that got the
// message tells. Not parallel: it sets the environment.
func TestQueueHandoffEndpointFromEnvironment(t *testing.T) {
	stands := map[string]*sqsStandIn{}
	urls := map[string]string{}
	for _, name := range []string{"code", "sqs", "global", "queue"} {
		stands[name] = &sqsStandIn{}
		hs := httptest.NewServer(stands[name])
		t.Cleanup(hs.Close)
		urls[name] = hs.URL
	}
	queueURL := urls["queue"] + "/123456789012/q"
	for _, tt := range []struct {
		name   string
		code   bool              // Settings.BaseEndpoint is the "code" stand-in
		env    map[string]string // stand-in names, or a literal for AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
		wantAt string
	}{
		{name: "none: the queue URL's host", wantAt: "queue"},
		{name: "AWS_ENDPOINT_URL", env: map[string]string{"AWS_ENDPOINT_URL": "global"}, wantAt: "global"},
		{name: "AWS_ENDPOINT_URL_SQS", env: map[string]string{"AWS_ENDPOINT_URL_SQS": "sqs"}, wantAt: "sqs"},
		{name: "AWS_ENDPOINT_URL_SQS before AWS_ENDPOINT_URL",
			env: map[string]string{"AWS_ENDPOINT_URL_SQS": "sqs", "AWS_ENDPOINT_URL": "global"}, wantAt: "sqs"},
		{name: "both ignored", env: map[string]string{"AWS_ENDPOINT_URL_SQS": "sqs", "AWS_ENDPOINT_URL": "global",
			"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "TRUE"}, wantAt: "queue"},
		{name: "not ignored when false", env: map[string]string{"AWS_ENDPOINT_URL_SQS": "sqs",
			"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "false"}, wantAt: "sqs"},
		{name: "set in code before the environment", code: true,
			env: map[string]string{"AWS_ENDPOINT_URL_SQS": "sqs", "AWS_ENDPOINT_URL": "global"}, wantAt: "code"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
				val := tt.env[v]
				if u, ok := urls[val]; ok {
					val = u
				}
				t.Setenv(v, val)
			}
			s := awsclient.Settings{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
			if tt.code {
				s.BaseEndpoint = urls["code"]
			}
			before := map[string]int{}
			for name, st := range stands {
				before[name] = st.count()
			}
			h, err := queue.NewHandoff(context.Background(), queueURL, s)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Hand(context.Background(), purge.Invalidation{Targets: []string{"osm/"}, BatchID: "b"}); err != nil {
				t.Fatal(err)
			}
			for name, st := range stands {
				want := before[name]
				if name == tt.wantAt {
					want++
				}
				if got := st.count(); got != want {
					t.Errorf("%s endpoint: got %d requests, want %d", name, got-before[name], want-before[name])
				}
			}
		})
	}
	t.Run("not an http URL", func(t *testing.T) {
		t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "")
		t.Setenv("AWS_ENDPOINT_URL_SQS", "localhost:4566")
		_, err := queue.NewHandoff(context.Background(), queueURL, awsclient.Settings{Region: "us-east-1",
			Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")})
		if err == nil || !strings.HasPrefix(err.Error(), "queue: ") || !strings.Contains(err.Error(), "AWS_ENDPOINT_URL_SQS") {
			t.Errorf("got %v, want the queue package's error naming AWS_ENDPOINT_URL_SQS", err)
		}
	})
}

// count is the requests the stand-in has answered.
func (s *sqsStandIn) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}
