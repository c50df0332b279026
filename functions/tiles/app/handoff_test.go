package app_test

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

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/s3event"
)

// sqsStandIn answers SendMessage as SQS does (AWS JSON 1.0), keeping the
// bodies, or fails every call with status when it is set.
type sqsStandIn struct {
	mu     sync.Mutex // guards sent
	sent   []sentMessage
	status int
}

type sentMessage struct{ Queue, Body, Target, Auth string }

func (s *sqsStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct{ QueueUrl, MessageBody string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if s.status != 0 {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(s.status)
		w.Write([]byte(`{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}`))
		return
	}
	s.mu.Lock()
	s.sent = append(s.sent, sentMessage{in.QueueUrl, in.MessageBody, r.Header.Get("X-Amz-Target"), r.Header.Get("Authorization")})
	s.mu.Unlock()
	sum := md5.Sum([]byte(in.MessageBody))
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	json.NewEncoder(w).Encode(map[string]string{"MessageId": "m-1", "MD5OfMessageBody": hex.EncodeToString(sum[:])})
}

// TestQueueHandoff: an admin purge's invalidation goes to the worker's queue
// as one signed SendMessage whose body the worker's decoder recognises; a
// refused send is an error of the app package.
func TestQueueHandoff(t *testing.T) {
	t.Parallel()
	const queue = "https://sqs.eu-west-1.amazonaws.com/123456789012/tilesieve-TileEventsQueue"
	inv := purge.Invalidation{Targets: []string{"osm.json*", "osm/"}, BatchID: "admin:osm/:1", Seq: 4, Source: "admin"}
	for _, tt := range []struct {
		name   string
		status int
	}{{"sent", 0}, {"refused", http.StatusBadRequest}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stand := &sqsStandIn{status: tt.status}
			hs := httptest.NewServer(stand)
			t.Cleanup(hs.Close)
			h, err := app.NewQueueHandoff(context.Background(), queue, awsclient.Settings{
				Region: "eu-west-1", BaseEndpoint: hs.URL, RetryMaxAttempts: 1,
				Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
			})
			if err != nil {
				t.Fatal(err)
			}
			err = h.Hand(context.Background(), inv)
			if tt.status != 0 {
				if err == nil || !strings.HasPrefix(err.Error(), "app: ") || !strings.Contains(err.Error(), "QueueDoesNotExist") {
					t.Errorf("got %v, want the app package's error carrying SQS's", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			stand.mu.Lock()
			sent := slices.Clone(stand.sent)
			stand.mu.Unlock()
			if len(sent) != 1 {
				t.Fatalf("sent %d messages, want 1", len(sent))
			}
			m := sent[0]
			if m.Queue != queue || m.Target != "AmazonSQS.SendMessage" || !strings.HasPrefix(m.Auth, "AWS4-HMAC-SHA256 ") {
				t.Errorf("request %+v: want a signed SendMessage to %s", m, queue)
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
