package templatetest

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/serverless"

	"github.com/tilesieve/tilesieve/shared/config"
)

const (
	managedAllViewerExceptHost = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
	managedCachingDisabled     = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
)

// noCDN is the explicit opt-in of a public function URL without CloudFront.
var noCDN = map[string]string{"CreateCdn": "false", "UrlAuthType": "NONE"}

// with is params plus the key/value pairs kv.
func with(params map[string]string, kv ...string) map[string]string {
	m := maps.Clone(params)
	if m == nil {
		m = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func function(t *testing.T, tpl *cloudformation.Template, name string) *serverless.Function {
	t.Helper()
	fn, err := tpl.GetServerlessFunctionWithName(name)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// templateVars are the variables the template must set: the documented ones
// minus those for local runs only.
func templateVars(vars []config.Var) []string {
	var out []string
	for _, v := range vars {
		if !v.LocalOnly {
			out = append(out, v.Name)
		}
	}
	slices.Sort(out)
	return out
}

func TestFunctionsRuntime(t *testing.T) {
	t.Parallel()
	tpl := open(t, nil)
	rawTpl := raw(t)
	for _, name := range []string{"TilesFunction", "SyncWorker"} {
		t.Run(name, func(t *testing.T) {
			fn := function(t, tpl, name)
			// SAM merges Globals into the function; check the merged view, and
			// goformation's (unmerged) view where the function sets the property.
			props := at(t, rawTpl, "Resources", name, "Properties")
			if got := at(t, props, "Handler"); got != "bootstrap" {
				t.Errorf("Handler %v, want bootstrap", got)
			}
			if got := at(t, props, "Runtime"); got != "provided.al2023" {
				t.Errorf("Runtime %v, want provided.al2023", got)
			}
			if got := strs(t, at(t, props, "Architectures")); !slices.Equal(got, []string{"arm64"}) {
				t.Errorf("Architectures %v, want [arm64]", got)
			}
			if got := at(t, props, "CodeUri"); got != "." {
				t.Errorf("CodeUri %v, want . (the Makefile builds from the module root)", got)
			}
			if fn.Handler != nil && *fn.Handler != "bootstrap" || fn.Runtime != nil && *fn.Runtime != "provided.al2023" {
				t.Errorf("goformation sees Handler %v Runtime %v", deref(fn.Handler), deref(fn.Runtime))
			}
			if fn.Architectures != nil && !slices.Equal(fn.Architectures, []string{"arm64"}) {
				t.Errorf("goformation sees Architectures %v", fn.Architectures)
			}
			if got := fn.AWSCloudFormationMetadata["BuildMethod"]; got != "makefile" {
				t.Errorf("Metadata.BuildMethod %v, want makefile (make build-%s)", got, name)
			}
		})
	}
}

func TestFunctionSizesFollowParameters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fn, mem, timeout, storage string
		timeoutValue              int
	}{
		{"TilesFunction", "TilesMemorySize", "TilesTimeout", "TilesEphemeralStorage", 41},
		{"SyncWorker", "WorkerMemorySize", "WorkerTimeout", "WorkerEphemeralStorage", 120},
	} {
		t.Run(tc.fn, func(t *testing.T) {
			fn := function(t, open(t, with(noCDN, tc.mem, "1769", tc.timeout, strconv.Itoa(tc.timeoutValue), tc.storage, "3072")), tc.fn)
			if deref(fn.MemorySize) != 1769 || deref(fn.Timeout) != tc.timeoutValue || fn.EphemeralStorage == nil || fn.EphemeralStorage.Size != 3072 {
				t.Fatalf("memory %d timeout %d storage %+v: want the parameters' 1769, %d, 3072",
					deref(fn.MemorySize), deref(fn.Timeout), fn.EphemeralStorage, tc.timeoutValue)
			}
			def := function(t, open(t, nil), tc.fn)
			if deref(def.MemorySize) < 128 || deref(def.Timeout) < 3 || def.EphemeralStorage == nil || def.EphemeralStorage.Size < 512 {
				t.Fatalf("defaults: memory %d timeout %d storage %+v", deref(def.MemorySize), deref(def.Timeout), def.EphemeralStorage)
			}
		})
	}
}

// TestTileEventsReachTheWorkerThroughSQS: S3 sends one record per
// notification, so the deployed path batches them in a queue: the bucket
// notifies TileEventsQueue of changes under TILES_PREFIX only, and the worker
// reads it through an event source mapping with a batching window and partial
// batch failures.
func TestTileEventsReachTheWorkerThroughSQS(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "probe/tiles/"} {
		t.Run("TilesPrefix="+prefix, func(t *testing.T) {
			params := map[string]string{}
			want := "tiles/"
			if prefix != "" {
				params["TilesPrefix"], want = prefix, prefix
			}
			tpl := open(t, params)
			if n := len(function(t, tpl, "TilesFunction").Events); n != 0 {
				t.Errorf("TilesFunction has %d events, want none (it is reached through its URL)", n)
			}
			b, err := tpl.GetS3BucketWithName("TilesBucket")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(b.AWSCloudFormationDependsOn, "TileEventsQueuePolicy") {
				t.Errorf("bucket DependsOn %v: S3 tests the queue policy when notifications are set", b.AWSCloudFormationDependsOn)
			}
			nc := b.NotificationConfiguration
			if nc == nil || len(nc.LambdaConfigurations) != 0 || len(nc.TopicConfigurations) != 0 {
				t.Fatalf("notifications %+v: want queue configurations only", nc)
			}
			var got []string
			for _, qc := range nc.QueueConfigurations {
				got = append(got, qc.Event)
				if qc.Queue != getAtt("TileEventsQueue", "Arn") {
					t.Errorf("%s goes to %q, want %s", qc.Event, qc.Queue, getAtt("TileEventsQueue", "Arn"))
				}
				if qc.Filter == nil || qc.Filter.S3Key == nil || len(qc.Filter.S3Key.Rules) != 1 {
					t.Fatalf("%s: filter %+v, want one prefix rule", qc.Event, qc.Filter)
				}
				if r := qc.Filter.S3Key.Rules[0]; r.Name != "prefix" || r.Value != want {
					t.Errorf("%s: filter %s=%q, want prefix=%q (TILES_PREFIX only; the journal lies outside)", qc.Event, r.Name, r.Value, want)
				}
			}
			slices.Sort(got)
			if want := []string{"s3:LifecycleExpiration:*", "s3:ObjectCreated:*", "s3:ObjectRemoved:*"}; !slices.Equal(got, want) {
				t.Errorf("notified events %v, want %v", got, want)
			}
		})
	}

	// goformation drops the SQS event's newer properties: read them as YAML.
	rawTpl := raw(t)
	events := at(t, rawTpl, "Resources", "SyncWorker", "Properties", "Events").(map[string]any)
	if len(events) != 1 {
		t.Fatalf("SyncWorker events %v, want one SQS event", slices.Collect(maps.Keys(events)))
	}
	for name, ev := range events {
		if got := at(t, ev, "Type"); got != "SQS" {
			t.Fatalf("event %s: type %v, want SQS (S3 invoking the worker directly sends one record per invocation)", name, got)
		}
		props := at(t, ev, "Properties")
		for key, want := range map[string]any{
			"Queue":                          map[string]any{"Fn::GetAtt": []any{"TileEventsQueue", "Arn"}},
			"BatchSize":                      map[string]any{"Ref": "WorkerBatchSize"},
			"MaximumBatchingWindowInSeconds": map[string]any{"Ref": "WorkerBatchingWindow"},
			"FunctionResponseTypes":          []any{"ReportBatchItemFailures"},
		} {
			if got := at(t, props, key); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("SQS event %s: %v, want %v", key, got, want)
			}
		}
	}
	window := at(t, rawTpl, "Parameters", "WorkerBatchingWindow")
	if d, lo := toFloat(at(t, window, "Default")), toFloat(at(t, window, "MinValue")); d < 1 || d > 10 || lo < 1 {
		t.Errorf("WorkerBatchingWindow default %v, min %v: want a few seconds, and at least 1 (BatchSize above 10 needs a window)", d, lo)
	}
	size := at(t, rawTpl, "Parameters", "WorkerBatchSize")
	if d, hi := toFloat(at(t, size, "Default")), toFloat(at(t, size, "MaxValue")); d < 100 || d > 2000 || hi > 10000 {
		t.Errorf("WorkerBatchSize default %v, max %v: want hundreds (6 MB of payload holds about 2,000), SQS's limit 10,000", d, hi)
	}
}

// TestTileEventsQueue: the visibility timeout covers six worker timeouts (as
// AWS asks for an SQS event source) for every allowed worker timeout, failed
// messages go to the dead-letter queue after enough receives, and only this
// stack's bucket may send.
func TestTileEventsQueue(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	for _, v := range allowedValues(t, rawTpl, "WorkerTimeout").([]any) {
		timeout := int(toFloat(v))
		tpl := open(t, map[string]string{"WorkerTimeout": strconv.Itoa(timeout)})
		q, err := tpl.GetSQSQueueWithName("TileEventsQueue")
		if err != nil {
			t.Fatal(err)
		}
		window := int(toFloat(at(t, rawTpl, "Parameters", "WorkerBatchingWindow", "MaxValue")))
		if got := deref(q.VisibilityTimeout); got < 6*timeout+window || got > 43200 {
			t.Errorf("WorkerTimeout %d: visibility timeout %d, want at least 6x it plus the longest batching window (%d)", timeout, got, 6*timeout+window)
		}
		if deref(function(t, tpl, "SyncWorker").Timeout) != timeout {
			t.Errorf("worker timeout does not follow WorkerTimeout=%d", timeout)
		}
	}
	tpl := open(t, map[string]string{"WorkerMaxReceiveCount": "33"})
	q, err := tpl.GetSQSQueueWithName("TileEventsQueue")
	if err != nil {
		t.Fatal(err)
	}
	redrive, _ := q.RedrivePolicy.(map[string]any)
	if redrive["deadLetterTargetArn"] != getAtt("DeadLetterQueue", "Arn") || toFloat(redrive["maxReceiveCount"]) != 33 {
		t.Errorf("redrive policy %v, want the dead-letter queue after WorkerMaxReceiveCount (33) receives", q.RedrivePolicy)
	}
	if d := toFloat(at(t, rawTpl, "Parameters", "WorkerMaxReceiveCount", "Default")); d < 5 {
		t.Errorf("WorkerMaxReceiveCount default %v: throttled and budget-bound deliveries count as receives; want at least 5", d)
	}
	dlq, err := tpl.GetSQSQueueWithName("DeadLetterQueue")
	if err != nil {
		t.Fatal(err)
	}
	if deref(dlq.MessageRetentionPeriod) <= deref(q.MessageRetentionPeriod) || deref(dlq.MessageRetentionPeriod) < 4*24*3600 {
		t.Errorf("DLQ keeps messages %d s, the queue %d s: want the DLQ longer, and days", deref(dlq.MessageRetentionPeriod), deref(q.MessageRetentionPeriod))
	}

	pol, err := tpl.GetSQSQueuePolicyWithName("TileEventsQueuePolicy")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pol.Queues, []string{ref("TileEventsQueue")}) {
		t.Errorf("queue policy on %v", pol.Queues)
	}
	stmts := policyStatements(t, pol.PolicyDocument)
	if len(stmts) != 1 {
		t.Fatalf("queue policy %v, want one statement", pol.PolicyDocument)
	}
	st := stmts[0]
	principal, _ := st["Principal"].(map[string]any)
	cond, _ := st["Condition"].(map[string]any)
	arnEq, _ := cond["ArnEquals"].(map[string]any)
	strEq, _ := cond["StringEquals"].(map[string]any)
	if st["Effect"] != "Allow" || fmt.Sprint(principal["Service"]) != "s3.amazonaws.com" ||
		fmt.Sprint(asStrings(st["Action"])) != "[sqs:SendMessage]" || st["Resource"] != getAtt("TileEventsQueue", "Arn") {
		t.Errorf("queue policy statement %v: want s3.amazonaws.com allowed sqs:SendMessage on the queue only", st)
	}
	if arnEq["aws:SourceArn"] != wantBucketARN || strEq["aws:SourceAccount"] != pseudo["AWS::AccountId"] || len(cond) != 2 {
		t.Errorf("queue policy conditions %v: want aws:SourceArn %s and aws:SourceAccount %s", cond, wantBucketARN, pseudo["AWS::AccountId"])
	}
	if _, ok := tpl.Outputs["TileEventsQueueUrl"]; !ok {
		t.Error("no TileEventsQueueUrl output")
	}
	if _, ok := tpl.Outputs["DeadLetterQueueUrl"]; !ok {
		t.Error("no DeadLetterQueueUrl output")
	}
}

// TestDeadLetterQueueAlarm: a notification in the dead-letter queue raises an
// alarm, which mails the optional AlarmEmail through SNS.
func TestDeadLetterQueueAlarm(t *testing.T) {
	t.Parallel()
	for _, email := range []string{"", "ops@example.com"} {
		t.Run("AlarmEmail="+email, func(t *testing.T) {
			tpl := open(t, map[string]string{"AlarmEmail": email})
			a, err := tpl.GetCloudWatchAlarmWithName("DeadLetterQueueAlarm")
			if err != nil {
				t.Fatal(err)
			}
			if deref(a.Namespace) != "AWS/SQS" || deref(a.MetricName) != "ApproximateNumberOfMessagesVisible" ||
				a.ComparisonOperator != "GreaterThanThreshold" || deref(a.Threshold) != 0 || deref(a.TreatMissingData) != "notBreaching" {
				t.Errorf("alarm %s %s %s %v (missing data %s): want visible messages > 0", deref(a.Namespace), deref(a.MetricName), a.ComparisonOperator, deref(a.Threshold), deref(a.TreatMissingData))
			}
			if len(a.Dimensions) != 1 || a.Dimensions[0].Name != "QueueName" || a.Dimensions[0].Value != getAtt("DeadLetterQueue", "QueueName") {
				t.Errorf("alarm dimensions %+v, want the dead-letter queue's name", a.Dimensions)
			}
			// One topic, always there, for every alarm; the e-mail only subscribes to it.
			if !slices.Equal(a.AlarmActions, []string{ref("AlarmTopic")}) {
				t.Errorf("alarm actions %v, want the topic", a.AlarmActions)
			}
			topic, err := tpl.GetSNSTopicWithName("AlarmTopic")
			if err != nil {
				t.Fatal(err)
			}
			if email == "" {
				if len(topic.Subscription) != 0 {
					t.Errorf("topic subscriptions %+v without an e-mail address", topic.Subscription)
				}
				return
			}
			if len(topic.Subscription) != 1 || topic.Subscription[0].Protocol != "email" || topic.Subscription[0].Endpoint != email {
				t.Errorf("topic subscriptions %+v, want one e-mail to %s", topic.Subscription, email)
			}
		})
	}
}

func TestBucket(t *testing.T) {
	t.Parallel()
	tpl := open(t, nil)
	b, err := tpl.GetS3BucketWithName("TilesBucket")
	if err != nil {
		t.Fatal(err)
	}
	if got := deref(b.BucketName); got != wantBucket {
		t.Errorf("bucket name %q, want %q (derived from the stack, so policies need no !Ref)", got, wantBucket)
	}
	if pab := b.PublicAccessBlockConfiguration; pab == nil || !deref(pab.BlockPublicAcls) || !deref(pab.BlockPublicPolicy) ||
		!deref(pab.IgnorePublicAcls) || !deref(pab.RestrictPublicBuckets) {
		t.Errorf("public access block %+v, want all on", pab)
	}
	if b.AWSCloudFormationDeletionPolicy != "Retain" {
		t.Errorf("DeletionPolicy %q, want Retain: tiles are data", b.AWSCloudFormationDeletionPolicy)
	}
	if len(wantBucket) > 63 {
		t.Errorf("bucket name %q longer than 63", wantBucket)
	}
}

// statement is one IAM policy statement, as goformation leaves it.
type statement struct {
	sid       string
	actions   []string
	resources []string
	condition map[string]any
}

func asStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

// roles names each function's explicit role.
var roles = map[string]string{"TilesFunction": "TilesFunctionRole", "SyncWorker": "SyncWorkerRole"}

// statements are the Allow statements of the inline policies of the role the
// function runs as (its own explicit role; SAM's Policies are not used).
func statements(t *testing.T, tpl *cloudformation.Template, fnName string) []statement {
	t.Helper()
	fn := function(t, tpl, fnName)
	roleName := roles[fnName]
	if deref(fn.Role) != getAtt(roleName, "Arn") {
		t.Fatalf("%s runs as %q, want its explicit role %s", fnName, deref(fn.Role), getAtt(roleName, "Arn"))
	}
	if fn.Policies != nil {
		t.Fatalf("%s has SAM Policies %+v beside its explicit role", fnName, fn.Policies)
	}
	role, err := tpl.GetIAMRoleWithName(roleName)
	if err != nil {
		t.Fatal(err)
	}
	if len(role.ManagedPolicyArns) != 0 {
		t.Fatalf("%s has managed policies %v: every grant is inline and named", roleName, role.ManagedPolicyArns)
	}
	var out []statement
	for _, pol := range role.Policies {
		if pol.PolicyDocument == nil { // an !If that chose AWS::NoValue
			continue
		}
		doc, ok := pol.PolicyDocument.(map[string]any)
		if !ok {
			t.Fatalf("policy %s is a %T", pol.PolicyName, pol.PolicyDocument)
		}
		list, _ := doc["Statement"].([]any)
		for _, s := range list {
			if s == nil { // an !If that chose AWS::NoValue
				continue
			}
			m, ok := s.(map[string]any)
			if !ok {
				t.Fatalf("statement %v is a %T", s, s)
			}
			if m["Effect"] != "Allow" {
				t.Fatalf("statement %v: only Allow statements expected", m)
			}
			if _, ok := m["NotAction"]; ok {
				t.Fatalf("statement %v uses NotAction", m)
			}
			if _, ok := m["NotResource"]; ok {
				t.Fatalf("statement %v uses NotResource", m)
			}
			cond, _ := m["Condition"].(map[string]any)
			out = append(out, statement{
				sid: fmt.Sprint(m["Sid"]), actions: asStrings(m["Action"]), resources: asStrings(m["Resource"]), condition: cond,
			})
		}
	}
	return out
}

// grants lists "action on resource" pairs (with the s3:prefix condition of
// ListBucket folded in as "resource?prefix=...", and none when unconditioned).
func grants(t *testing.T, stmts []statement) []string {
	t.Helper()
	var out []string
	for _, s := range stmts {
		for _, a := range s.actions {
			if strings.Contains(a, "*") {
				t.Errorf("statement %s: wildcard action %q", s.sid, a)
			}
			for _, r := range s.resources {
				if r == "*" || r == "" {
					t.Errorf("statement %s: resource %q for %s", s.sid, r, a)
				}
				if a == "s3:ListBucket" {
					like, _ := s.condition["StringLike"].(map[string]any)
					prefixes := asStrings(like["s3:prefix"])
					if len(prefixes) == 0 {
						out = append(out, a+" "+r)
					}
					for _, p := range prefixes {
						out = append(out, a+" "+r+"?prefix="+p)
					}
					continue
				}
				out = append(out, a+" "+r)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestLeastPrivilege(t *testing.T) {
	t.Parallel()
	const (
		tiles   = "probe/tiles/"
		journal = "probe/journal/"
		dist    = "arn:aws:cloudfront::123456789012:distribution/"
	)
	base := map[string]string{"TilesPrefix": tiles, "JournalPrefix": journal}
	public := with(base, "CreateCdn", "false", "UrlAuthType", "NONE")
	logs := func(group string) []string {
		return []string{"logs:CreateLogStream " + getAtt(group, "Arn"), "logs:PutLogEvents " + getAtt(group, "Arn")}
	}
	tilesGrants := func(bucketARN string) []string {
		return append(logs("TilesLogGroup"),
			"s3:GetObject "+bucketARN+"/"+journal+"*",
			"s3:GetObject "+bucketARN+"/"+tiles+"*",
			// Unconditioned: S3 answers a GetObject of a missing key with 404
			// only to a caller that may list the bucket, and a GetObject has no
			// s3:prefix for a condition to match (with one, missing tiles are 403).
			"s3:ListBucket "+bucketARN)
	}
	// The journal's writes from the tile function are admin purges, and so
	// are its messages to the worker's queue (their CDN invalidations).
	queue := getAtt("TileEventsQueue", "Arn")
	adminGrants := []string{"s3:PutObject " + wantBucketARN + "/" + journal + "*", "sqs:SendMessage " + queue}
	workerGrants := func(bucketARN string) []string {
		return append(logs("WorkerLogGroup"),
			"s3:GetObject "+bucketARN+"/"+journal+"*",
			// Unconditioned too: the journal reads keys that may be missing.
			"s3:ListBucket "+bucketARN,
			"s3:PutObject "+bucketARN+"/"+journal+"*",
			// What the event source mapping needs of the one queue.
			"sqs:ChangeMessageVisibility "+queue, "sqs:DeleteMessage "+queue,
			"sqs:GetQueueAttributes "+queue, "sqs:ReceiveMessage "+queue)
	}
	cdnGrants := func(arn string) []string {
		return []string{"cloudfront:CreateInvalidation " + arn, "cloudfront:GetInvalidation " + arn, "cloudfront:ListInvalidations " + arn}
	}
	plus := func(l []string, extra ...string) []string {
		out := append(slices.Clone(l), extra...)
		slices.Sort(out)
		return out
	}
	own, theirs := wantBucketARN, "arn:aws:s3:::my-maps"
	for _, tc := range []struct {
		name                string
		params              map[string]string
		wantTiles, wantWork []string
	}{
		{"CDN (the default)", base, plus(tilesGrants(own)), plus(workerGrants(own), cdnGrants(dist+ref("Distribution"))...)},
		// Only the worker talks to CloudFront, whatever the parameters.
		{"CDN, admin API", with(base, "AdminToken", "s3cret"),
			plus(tilesGrants(own), adminGrants...), plus(workerGrants(own), cdnGrants(dist+ref("Distribution"))...)},
		{"public URL, no CDN", public, plus(tilesGrants(own)), plus(workerGrants(own))},
		{"admin API", with(public, "AdminToken", "s3cret"), plus(tilesGrants(own), adminGrants...), plus(workerGrants(own))},
		{"external CDN, admin API", with(public, "DistributionId", "E2EXAMPLE", "AdminToken", "s3cret"),
			plus(tilesGrants(own), adminGrants...), plus(workerGrants(own), cdnGrants(dist+"E2EXAMPLE")...)},
		{"existing bucket", with(base, "ExistingBucket", "my-maps"),
			plus(tilesGrants(theirs)), plus(workerGrants(theirs), cdnGrants(dist+ref("Distribution"))...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl := open(t, tc.params)
			if got := grants(t, statements(t, tpl, "TilesFunction")); !slices.Equal(got, tc.wantTiles) {
				t.Errorf("TilesFunction grants\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.wantTiles, "\n"))
			}
			if got := grants(t, statements(t, tpl, "SyncWorker")); !slices.Equal(got, tc.wantWork) {
				t.Errorf("SyncWorker grants\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.wantWork, "\n"))
			}
		})
	}
}

// TestMissingKeysAre404s: without an unconditioned s3:ListBucket on the
// bucket, S3 answers a GET or HEAD of a missing key with 403, not 404. Every
// role that reads keys that may be missing (tiles, the journal) must have one.
// The local S3 does not enforce IAM, so this test is where that is checked.
func TestMissingKeysAre404s(t *testing.T) {
	t.Parallel()
	for _, params := range []map[string]string{nil, noCDN, {"AdminToken": "s3cret", "DistributionId": "E2EXAMPLE"}} {
		tpl := open(t, params)
		for _, name := range []string{"TilesFunction", "SyncWorker"} {
			g := grants(t, statements(t, tpl, name))
			reads := slices.ContainsFunc(g, func(s string) bool { return strings.HasPrefix(s, "s3:GetObject "+wantBucketARN+"/") })
			if !reads {
				t.Errorf("%s reads nothing from the bucket: %v", name, g)
			}
			if !slices.Contains(g, "s3:ListBucket "+wantBucketARN) {
				t.Errorf("%s reads keys that may be missing but has no unconditioned s3:ListBucket on %s: %v", name, wantBucketARN, g)
			}
		}
	}
}

func TestEnvironmentMatchesConfig(t *testing.T) {
	t.Parallel()
	tpl := open(t, noCDN)
	for _, tc := range []struct {
		fn   string
		vars []config.Var
	}{
		{"TilesFunction", config.TilesVars()},
		{"SyncWorker", config.WorkerVars()},
	} {
		t.Run(tc.fn, func(t *testing.T) {
			fn := function(t, tpl, tc.fn)
			if fn.Environment == nil {
				t.Fatal("no environment")
			}
			got := slices.Sorted(maps.Keys(fn.Environment.Variables))
			if want := templateVars(tc.vars); !slices.Equal(got, want) {
				t.Errorf("environment %v\nwant (config's list minus local-only) %v", got, want)
			}
			for _, name := range got {
				if strings.HasPrefix(name, "AWS_") {
					t.Errorf("%s: the template must not set AWS_* variables (reserved, or local-only)", name)
				}
			}
			env := fn.Environment.Variables
			if env["TILES_BUCKET"] != wantBucket || env["TILES_PREFIX"] != "tiles/" || env["JOURNAL_PREFIX"] != "_tilesieve/journal/" {
				t.Errorf("TILES_BUCKET %q TILES_PREFIX %q JOURNAL_PREFIX %q", env["TILES_BUCKET"], env["TILES_PREFIX"], env["JOURNAL_PREFIX"])
			}
			if env["DISTRIBUTION_ID"] != "" {
				t.Errorf("DISTRIBUTION_ID %q without a CDN, want empty", env["DISTRIBUTION_ID"])
			}
		})
	}
}

// TestOneDeployOnlyTheWorkerInvalidates: the worker gets the created
// distribution's ID by reference; the tile function gets none (no second
// deploy) and hands its admin purges' invalidations to the worker's queue.
func TestOneDeployOnlyTheWorkerInvalidates(t *testing.T) {
	t.Parallel()
	for _, params := range []map[string]string{
		{"CreateCdn": "true", "UrlAuthType": "AWS_IAM", "AdminToken": "s3cret"},
		{"CreateCdn": "false", "UrlAuthType": "NONE", "DistributionId": "E2EXAMPLE", "AdminToken": "s3cret"},
	} {
		tpl := open(t, params)
		want := ref("Distribution")
		if params["DistributionId"] != "" {
			want = params["DistributionId"]
		}
		if got := function(t, tpl, "SyncWorker").Environment.Variables["DISTRIBUTION_ID"]; got != want {
			t.Errorf("%v: worker DISTRIBUTION_ID %q, want %s", params, got, want)
		}
		tiles := function(t, tpl, "TilesFunction").Environment.Variables
		if got, ok := tiles["DISTRIBUTION_ID"]; ok {
			t.Errorf("%v: tile function DISTRIBUTION_ID %q, want none", params, got)
		}
		if got := tiles["PURGE_QUEUE_URL"]; got != ref("TileEventsQueue") {
			t.Errorf("%v: tile function PURGE_QUEUE_URL %q, want %s", params, got, ref("TileEventsQueue"))
		}
		if _, ok := tpl.Outputs["DistributionIdForTilesFunction"]; ok {
			t.Errorf("%v: an output for a second deploy", params)
		}
	}
	// Without the admin API there is nothing to hand over.
	if got := function(t, open(t, nil), "TilesFunction").Environment.Variables["PURGE_QUEUE_URL"]; got != "" {
		t.Errorf("PURGE_QUEUE_URL %q without an admin token, want empty", got)
	}
}

// TestEnvironmentLoads feeds each function's resolved environment to the config
// package, as Lambda would at init, for every allowed value of the enumerated
// parameters.
func TestEnvironmentLoads(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	cases := []map[string]string{nil, {"CreateCdn": "true", "UrlAuthType": "AWS_IAM", "DistributionId": "E2EXAMPLE", "CdnPathPrefix": "maps/"}, twoSources}
	for _, p := range []string{"UrlInvokeMode", "ApplicationLogLevel", "MissingTile", "DiskFsync", "S3ForcePathStyle", "Metrics"} {
		for _, v := range strs(t, allowedValues(t, rawTpl, p)) {
			cases = append(cases, map[string]string{p: v})
		}
	}
	for _, params := range cases {
		t.Run(fmt.Sprint(sortedPairs(params)), func(t *testing.T) {
			tpl := open(t, params)
			tiles := function(t, tpl, "TilesFunction")
			env := maps.Clone(tiles.Environment.Variables)
			env["AWS_LAMBDA_RUNTIME_API"] = "127.0.0.1:9001"
			env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = strconv.Itoa(deref(tiles.MemorySize))
			c, err := config.LoadTiles(func(k string) string { return env[k] })
			if err != nil {
				t.Fatalf("tile function environment %v: %v", tiles.Environment.Variables, err)
			}
			if tiles.FunctionUrlConfig == nil {
				t.Fatal("TilesFunction has no FunctionUrlConfig")
			}
			if got, want := c.InvokeMode, deref(tiles.FunctionUrlConfig.InvokeMode); got != want {
				t.Errorf("INVOKE_MODE %q, function URL InvokeMode %q: they must agree", got, want)
			}
			worker := function(t, tpl, "SyncWorker")
			wenv := worker.Environment.Variables
			if _, err := config.LoadWorker(func(k string) string { return wenv[k] }); err != nil {
				t.Fatalf("worker environment %v: %v", wenv, err)
			}
		})
	}
}

func allowedValues(t *testing.T, rawTpl map[string]any, param string) any {
	t.Helper()
	return at(t, rawTpl, "Parameters", param, "AllowedValues")
}

func TestFunctionURL(t *testing.T) {
	t.Parallel()
	// IAM-only by default: the CDN's origin access control is the way in.
	url := function(t, open(t, nil), "TilesFunction").FunctionUrlConfig
	if url == nil || url.AuthType != "AWS_IAM" || deref(url.InvokeMode) != "BUFFERED" {
		t.Fatalf("default function URL %+v, want AuthType AWS_IAM, InvokeMode BUFFERED", url)
	}
	url = function(t, open(t, with(noCDN, "UrlInvokeMode", "RESPONSE_STREAM")), "TilesFunction").FunctionUrlConfig
	if url.AuthType != "NONE" || deref(url.InvokeMode) != "RESPONSE_STREAM" {
		t.Fatalf("function URL %+v does not follow UrlAuthType/UrlInvokeMode", url)
	}

	// goformation drops Cors: read it from the YAML.
	rawTpl := raw(t)
	cfg := at(t, rawTpl, "Resources", "TilesFunction", "Properties", "FunctionUrlConfig")
	if got := at(t, cfg, "AuthType"); fmt.Sprint(got) != fmt.Sprint(map[string]any{"Ref": "UrlAuthType"}) {
		t.Errorf("AuthType %v, want !Ref UrlAuthType", got)
	}
	if got := strs(t, allowedValues(t, rawTpl, "UrlAuthType")); !slices.Equal(got, []string{"NONE", "AWS_IAM"}) {
		t.Errorf("UrlAuthType allows %v", got)
	}
	if got := strs(t, allowedValues(t, rawTpl, "UrlInvokeMode")); !slices.Equal(got, []string{"BUFFERED", "RESPONSE_STREAM"}) {
		t.Errorf("UrlInvokeMode allows %v", got)
	}
	if got := at(t, rawTpl, "Parameters", "UrlInvokeMode", "Default"); got != "BUFFERED" {
		t.Errorf("UrlInvokeMode default %v", got)
	}
	invoke := at(t, cfg, "InvokeMode")
	env := at(t, rawTpl, "Resources", "TilesFunction", "Properties", "Environment", "Variables", "INVOKE_MODE")
	if fmt.Sprint(invoke) != fmt.Sprint(env) {
		t.Errorf("INVOKE_MODE is %v but the URL's InvokeMode is %v: one parameter must feed both", env, invoke)
	}
	// CORS is the function's own (CORS_ALLOW_ORIGINS), fed by the one
	// parameter; the URL's CORS would overwrite its headers.
	if c, ok := cfg.(map[string]any)["Cors"]; ok {
		t.Errorf("FunctionUrlConfig.Cors %v: the function answers CORS itself", c)
	}
	if typ, def := at(t, rawTpl, "Parameters", "CorsAllowOrigins", "Type"), at(t, rawTpl, "Parameters", "CorsAllowOrigins", "Default"); typ != "CommaDelimitedList" || def != "*" {
		t.Errorf("CorsAllowOrigins is %v defaulting to %v, want a CommaDelimitedList defaulting to *", typ, def)
	}
	env = at(t, rawTpl, "Resources", "TilesFunction", "Properties", "Environment", "Variables", "CORS_ALLOW_ORIGINS")
	if want := map[string]any{"Fn::Join": []any{",", map[string]any{"Ref": "CorsAllowOrigins"}}}; fmt.Sprint(env) != fmt.Sprint(want) {
		t.Errorf("CORS_ALLOW_ORIGINS is %v, want the CorsAllowOrigins parameter joined", env)
	}
}

func TestPublicURLPermissions(t *testing.T) {
	t.Parallel()
	// SAM adds these itself only when AuthType is a literal NONE.
	tpl := open(t, nil)
	rawTpl := raw(t)
	for name, action := range map[string]string{
		"TilesFunctionUrlPublicInvokeUrl": "lambda:InvokeFunctionUrl",
		"TilesFunctionUrlPublicInvoke":    "lambda:InvokeFunction",
	} {
		p, err := tpl.GetLambdaPermissionWithName(name)
		if err != nil {
			t.Fatal(err)
		}
		if p.AWSCloudFormationCondition != "UrlIsPublic" || p.Action != action || p.Principal != "*" || p.FunctionName != ref("TilesFunction") {
			t.Errorf("%s: %s %s to %s if %s", name, p.Action, p.FunctionName, p.Principal, p.AWSCloudFormationCondition)
		}
	}
	if got := at(t, rawTpl, "Resources", "TilesFunctionUrlPublicInvokeUrl", "Properties", "FunctionUrlAuthType"); got != "NONE" {
		t.Errorf("public URL permission FunctionUrlAuthType %v", got)
	}
	// goformation does not know InvokedViaFunctionUrl.
	if got := at(t, rawTpl, "Resources", "TilesFunctionUrlPublicInvoke", "Properties", "InvokedViaFunctionUrl"); got != true {
		t.Errorf("public invoke permission InvokedViaFunctionUrl %v, want true (invocations through the URL only)", got)
	}
	if got := at(t, rawTpl, "Conditions", "UrlIsPublic"); fmt.Sprint(got) != fmt.Sprint(map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "UrlAuthType"}, "NONE"}}) {
		t.Errorf("UrlIsPublic is %v", got)
	}
}

func TestCDN(t *testing.T) {
	t.Parallel()
	tpl := open(t, map[string]string{"CreateCdn": "true", "UrlAuthType": "AWS_IAM"})
	rawTpl := raw(t)

	// Every CloudFront resource and CDN permission exists only with CreateCdn.
	for name, res := range rawTpl["Resources"].(map[string]any) {
		typ := fmt.Sprint(res.(map[string]any)["Type"])
		cdnPermission := strings.HasPrefix(name, "Cdn")
		if strings.HasPrefix(typ, "AWS::CloudFront::") || cdnPermission {
			// CdnCors is CreateCdn and CORS on.
			if got := res.(map[string]any)["Condition"]; got != "CreateCdn" && got != "CdnCors" {
				t.Errorf("%s (%s) has Condition %v, want CreateCdn", name, typ, got)
			}
		}
	}

	// The CDN's CORS says what the function says, and never overrides it.
	cors := at(t, rawTpl, "Resources", "TilesResponseHeadersPolicy", "Properties", "ResponseHeadersPolicyConfig", "CorsConfig")
	if fmt.Sprint(at(t, cors, "OriginOverride")) != "false" ||
		fmt.Sprint(at(t, cors, "AccessControlAllowOrigins", "Items")) != fmt.Sprint(map[string]any{"Ref": "CorsAllowOrigins"}) {
		t.Errorf("response headers policy CORS %v: want the CorsAllowOrigins parameter, OriginOverride false", cors)
	}
	if got := at(t, rawTpl, "Resources", "Distribution", "Properties", "DistributionConfig", "DefaultCacheBehavior", "ResponseHeadersPolicyId"); !strings.Contains(fmt.Sprint(got), "TilesResponseHeadersPolicy") {
		t.Errorf("default cache behaviour's ResponseHeadersPolicyId %v", got)
	}

	oac, err := tpl.GetCloudFrontOriginAccessControlWithName("OriginAccessControl")
	if err != nil {
		t.Fatal(err)
	}
	if c := oac.OriginAccessControlConfig; c == nil || c.OriginAccessControlOriginType != "lambda" || c.SigningBehavior != "always" || c.SigningProtocol != "sigv4" {
		t.Errorf("origin access control %+v, want lambda / always / sigv4", c)
	}

	d, err := tpl.GetCloudFrontDistributionWithName("Distribution")
	if err != nil {
		t.Fatal(err)
	}
	cfg := d.DistributionConfig
	if cfg == nil || !cfg.Enabled || len(cfg.Origins) != 1 {
		t.Fatalf("distribution config %+v: want one enabled origin", cfg)
	}
	o := cfg.Origins[0]
	if o.DomainName != fakeURLHost {
		t.Errorf("origin domain %q, want the function URL's host %q", o.DomainName, fakeURLHost)
	}
	if deref(o.OriginAccessControlId) != getAtt("OriginAccessControl", "Id") {
		t.Errorf("origin OAC %q", deref(o.OriginAccessControlId))
	}
	if o.CustomOriginConfig == nil || o.CustomOriginConfig.OriginProtocolPolicy != "https-only" {
		t.Errorf("origin must be reached over HTTPS: %+v", o.CustomOriginConfig)
	}
	def := cfg.DefaultCacheBehavior
	if def == nil || def.TargetOriginId != o.Id || deref(def.CachePolicyId) != ref("TilesCachePolicy") ||
		deref(def.OriginRequestPolicyId) != managedAllViewerExceptHost || def.ViewerProtocolPolicy != "redirect-to-https" {
		t.Errorf("default behaviour %+v", def)
	}
	if def != nil && (slices.Contains(def.AllowedMethods, "POST") || !slices.Contains(def.AllowedMethods, "HEAD")) {
		t.Errorf("tile behaviour allows %v, want GET/HEAD(/OPTIONS)", def.AllowedMethods)
	}
	if len(cfg.CacheBehaviors) != 1 {
		t.Fatalf("cache behaviours %+v, want the admin one", cfg.CacheBehaviors)
	}
	admin := cfg.CacheBehaviors[0]
	if admin.PathPattern != "/_tilesieve/*" || deref(admin.CachePolicyId) != managedCachingDisabled ||
		deref(admin.OriginRequestPolicyId) != managedAllViewerExceptHost || !slices.Contains(admin.AllowedMethods, "POST") {
		t.Errorf("admin behaviour %+v", admin)
	}

	cp, err := tpl.GetCloudFrontCachePolicyWithName("TilesCachePolicy")
	if err != nil {
		t.Fatal(err)
	}
	pc := cp.CachePolicyConfig
	if pc == nil || pc.MinTTL != 0 || pc.DefaultTTL != 86400 || pc.MaxTTL != 31536000 {
		t.Fatalf("cache policy TTLs %+v, want 0 / 86400 / 31536000 (honour the origin's Cache-Control)", pc)
	}
	key := pc.ParametersInCacheKeyAndForwardedToOrigin
	if key == nil || !key.EnableAcceptEncodingGzip || !deref(key.EnableAcceptEncodingBrotli) {
		t.Fatalf("cache key %+v: want gzip and brotli", key)
	}
	if key.CookiesConfig == nil || key.CookiesConfig.CookieBehavior != "none" || key.QueryStringsConfig == nil || key.QueryStringsConfig.QueryStringBehavior != "none" {
		t.Errorf("cache key has cookies %+v or query strings %+v", key.CookiesConfig, key.QueryStringsConfig)
	}
	if key.HeadersConfig == nil || key.HeadersConfig.HeaderBehavior != "none" {
		t.Errorf("with CORS * the cache key has headers %+v", key.HeadersConfig)
	}
	// With a list of origins, Origin joins the key (the URL answers each origin differently).
	cp, _ = open(t, map[string]string{"CreateCdn": "true", "UrlAuthType": "AWS_IAM", "CorsAllowOrigins": "https://a.example,https://b.example"}).GetCloudFrontCachePolicyWithName("TilesCachePolicy")
	if h := cp.CachePolicyConfig.ParametersInCacheKeyAndForwardedToOrigin.HeadersConfig; h == nil || h.HeaderBehavior != "whitelist" || !slices.Equal(h.Headers, []string{"Origin"}) {
		t.Errorf("with listed CORS origins the cache key headers are %+v, want Origin", h)
	}

	sourceARN := "arn:aws:cloudfront::123456789012:distribution/" + ref("Distribution")
	for name, action := range map[string]string{
		"CdnInvokeFunctionUrlPermission": "lambda:InvokeFunctionUrl",
		"CdnInvokeFunctionPermission":    "lambda:InvokeFunction",
	} {
		p, err := tpl.GetLambdaPermissionWithName(name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Action != action || p.Principal != "cloudfront.amazonaws.com" || deref(p.SourceArn) != sourceARN || p.FunctionName != ref("TilesFunction") {
			t.Errorf("%s: %s on %s for %s from %s", name, p.Action, p.FunctionName, p.Principal, deref(p.SourceArn))
		}
		if action == "lambda:InvokeFunctionUrl" && deref(p.FunctionUrlAuthType) != "AWS_IAM" {
			t.Errorf("%s: FunctionUrlAuthType %q, want AWS_IAM", name, deref(p.FunctionUrlAuthType))
		}
	}
	if got := at(t, rawTpl, "Resources", "CdnInvokeFunctionPermission", "Properties", "InvokedViaFunctionUrl"); got != true {
		t.Errorf("CloudFront's lambda:InvokeFunction is not limited to the URL: InvokedViaFunctionUrl %v", got)
	}
	if o, ok := tpl.Outputs["DistributionDomainName"]; !ok || deref(o.Condition) != "CreateCdn" {
		t.Errorf("DistributionDomainName output %+v, want one under CreateCdn", o)
	}
}

func TestCdnNeedsIamAuthRule(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	rule := at(t, rawTpl, "Rules", "CdnNeedsIamAuth")
	if got := at(t, rule, "RuleCondition"); fmt.Sprint(got) != fmt.Sprint(map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "CreateCdn"}, "true"}}) {
		t.Errorf("RuleCondition %v", got)
	}
	want := fmt.Sprint(map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "UrlAuthType"}, "AWS_IAM"}})
	found := false
	for _, a := range at(t, rule, "Assertions").([]any) {
		found = found || fmt.Sprint(at(t, a, "Assert")) == want
	}
	if !found {
		t.Error("no assertion UrlAuthType == AWS_IAM under CreateCdn")
	}
}

// TestMetricsSettings: both functions get the metrics switch and namespace
// from Globals, the tile function its interval and tilesets too, and the
// parameters reach the configuration the functions load.
func TestMetricsSettings(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	globals := at(t, rawTpl, "Globals", "Function", "Environment", "Variables")
	for name, param := range map[string]string{"METRICS": "Metrics", "METRICS_NAMESPACE": "MetricsNamespace"} {
		if got := at(t, globals, name); fmt.Sprint(got) != fmt.Sprint(map[string]any{"Ref": param}) {
			t.Errorf("Globals %s: %v, want !Ref %s", name, got, param)
		}
	}
	tpl := open(t, map[string]string{"Metrics": "false", "MetricsNamespace": "maps/prod", "MetricsInterval": "5m", "MetricsTileSets": "3"})
	tenv := function(t, tpl, "TilesFunction").Environment.Variables
	tiles, err := config.LoadTiles(func(k string) string { return tenv[k] })
	if err != nil {
		t.Fatal(err)
	}
	if want := (config.Metrics{Namespace: "maps/prod", Interval: 5 * time.Minute, MaxTileSets: 3}); tiles.Metrics != want {
		t.Errorf("tile function metrics %+v, want %+v", tiles.Metrics, want)
	}
	wenv := function(t, tpl, "SyncWorker").Environment.Variables
	worker, err := config.LoadWorker(func(k string) string { return wenv[k] })
	if err != nil {
		t.Fatal(err)
	}
	if worker.Metrics.Enabled || worker.Metrics.Namespace != "maps/prod" {
		t.Errorf("worker metrics %+v, want off in maps/prod", worker.Metrics)
	}
	def := function(t, open(t, nil), "TilesFunction").Environment.Variables
	if c, err := config.LoadTiles(func(k string) string { return def[k] }); err != nil || !c.Metrics.Enabled {
		t.Errorf("default metrics %+v, %v: want on", c.Metrics, err)
	}
}

// TestMetricsNeedInfoLogsRule: EMF lines have no level and Lambda counts
// them as INFO, so with metrics on the application log filter may not be
// stricter than INFO.
func TestMetricsNeedInfoLogsRule(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	rule := at(t, rawTpl, "Rules", "MetricsNeedInfoLogs")
	if got := at(t, rule, "RuleCondition"); fmt.Sprint(got) != fmt.Sprint(map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "Metrics"}, "true"}}) {
		t.Errorf("RuleCondition %v", got)
	}
	// The allowed levels that keep INFO lines, lowest first as the parameter lists them.
	allowed := strs(t, allowedValues(t, rawTpl, "ApplicationLogLevel"))
	keep := []any{}
	for _, l := range allowed[:slices.Index(allowed, "INFO")+1] {
		keep = append(keep, l)
	}
	if fmt.Sprint(keep) != "[TRACE DEBUG INFO]" {
		t.Fatalf("ApplicationLogLevel allows %v: the levels up to INFO are %v", allowed, keep)
	}
	want := fmt.Sprint(map[string]any{"Fn::Contains": []any{keep, map[string]any{"Ref": "ApplicationLogLevel"}}})
	found := false
	for _, a := range at(t, rule, "Assertions").([]any) {
		found = found || fmt.Sprint(at(t, a, "Assert")) == want
	}
	if !found {
		t.Errorf("no assertion %s under Metrics=true", want)
	}
}

func TestOutputs(t *testing.T) {
	t.Parallel()
	tpl := open(t, nil)
	for _, name := range []string{"TilesFunctionUrl", "TilesBucketName", "DeadLetterQueueUrl", "DistributionDomainName", "TilesFunctionName", "SyncWorkerName"} {
		if _, ok := tpl.Outputs[name]; !ok {
			t.Errorf("no output %s", name)
		}
	}
	if got := fmt.Sprint(tpl.Outputs["TilesFunctionUrl"].Value); got != fakeFunctionURL {
		t.Errorf("TilesFunctionUrl output %v", got)
	}
}

// TestNoBucketCycle guards the bucket/notification/role cycle: the functions may
// name the bucket only as a string, and refer to the bucket resource only in the
// worker's S3 event.
func TestNoBucketCycle(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	for _, fn := range []string{"TilesFunction", "SyncWorker"} {
		props := at(t, rawTpl, "Resources", fn, "Properties")
		walk(props, fn, func(path string, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			bad := m["Ref"] == "TilesBucket"
			if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) > 0 && ga[0] == "TilesBucket" {
				bad = true
			}
			if s, ok := m["Fn::Sub"].(string); ok && strings.Contains(s, "${TilesBucket") {
				bad = true
			}
			if bad {
				t.Errorf("%s refers to the TilesBucket resource: a dependency cycle through the bucket's notifications", path)
			}
			for k := range m {
				if strings.HasPrefix(k, "S3") && strings.HasSuffix(k, "Policy") {
					t.Errorf("%s uses the SAM policy template %s, which takes the bucket by reference", path, k)
				}
			}
		})
	}
	// The bucket depends on the queue policy, which must name it by string.
	walk(at(t, rawTpl, "Resources", "TileEventsQueuePolicy"), "TileEventsQueuePolicy", func(path string, v any) {
		if m, ok := v.(map[string]any); ok {
			ga, _ := m["Fn::GetAtt"].([]any)
			s, _ := m["Fn::Sub"].(string)
			if m["Ref"] == "TilesBucket" || len(ga) > 0 && ga[0] == "TilesBucket" || strings.Contains(s, "${TilesBucket") {
				t.Errorf("%s refers to the TilesBucket resource: a bucket -> policy -> bucket cycle", path)
			}
		}
	})
	// The tile function is the distribution's origin: no reference back to it.
	walk(at(t, rawTpl, "Resources", "TilesFunction"), "TilesFunction", func(path string, v any) {
		if m, ok := v.(map[string]any); ok {
			if m["Ref"] == "Distribution" {
				t.Errorf("%s refers to the Distribution: a dependency cycle through the function URL", path)
			}
			if s, ok := m["Fn::Sub"].(string); ok && strings.Contains(s, "${Distribution}") {
				t.Errorf("%s refers to the Distribution: a dependency cycle through the function URL", path)
			}
		}
	})
}

// TestParameters checks every parameter's default against its own constraints
// (CloudFormation rejects a stack otherwise), that each parameter is used, and the
// few facts the functions rely on.
func TestParameters(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	params := rawTpl["Parameters"].(map[string]any)
	used := map[string]bool{}
	for _, section := range []string{"Resources", "Conditions", "Rules", "Outputs"} {
		walk(rawTpl[section], section, func(_ string, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			if name, ok := m["Ref"].(string); ok {
				used[name] = true
			}
			sub := m["Fn::Sub"]
			if l, ok := sub.([]any); ok && len(l) > 0 {
				sub = l[0]
			}
			if s, ok := sub.(string); ok {
				for _, mm := range subVar.FindAllStringSubmatch(s, -1) {
					used[mm[1]] = true
				}
			}
		})
	}
	for name, p := range params {
		p := p.(map[string]any)
		if !used[name] {
			t.Errorf("parameter %s is never used", name)
		}
		if _, ok := p["Description"]; !ok {
			t.Errorf("parameter %s has no Description", name)
		}
		def, hasDef := p["Default"]
		if !hasDef {
			t.Errorf("parameter %s has no default: every setting has one", name)
			continue
		}
		ds := scalarString(def)
		if pat, ok := p["AllowedPattern"].(string); ok && !regexp.MustCompile(pat).MatchString(ds) {
			t.Errorf("parameter %s: default %q does not match its AllowedPattern %s", name, ds, pat)
		}
		if av, ok := p["AllowedValues"].([]any); ok {
			found := false
			for _, a := range av {
				found = found || scalarString(a) == ds
			}
			if !found {
				t.Errorf("parameter %s: default %q not among %v", name, ds, av)
			}
		}
		if p["Type"] == "Number" {
			n, err := strconv.ParseFloat(ds, 64)
			if err != nil {
				t.Errorf("parameter %s: default %q is not a number", name, ds)
			}
			if lo, ok := p["MinValue"]; ok && n < toFloat(lo) {
				t.Errorf("parameter %s: default %v below MinValue %v", name, n, lo)
			}
			if hi, ok := p["MaxValue"]; ok && n > toFloat(hi) {
				t.Errorf("parameter %s: default %v above MaxValue %v", name, n, hi)
			}
		}
	}
	if p := params["AdminToken"].(map[string]any); p["NoEcho"] != true || p["Default"] != "" {
		t.Errorf("AdminToken: NoEcho %v, default %q: want a NoEcho parameter defaulting to empty (admin API off)", p["NoEcho"], p["Default"])
	}
	tilesPrefix := scalarString(at(t, params, "TilesPrefix", "Default"))
	journal := scalarString(at(t, params, "JournalPrefix", "Default"))
	if strings.HasPrefix(journal, tilesPrefix) || strings.HasPrefix(tilesPrefix, journal) {
		t.Errorf("JournalPrefix %q and TilesPrefix %q overlap: the worker would trigger itself", journal, tilesPrefix)
	}
	if got := rawTpl["Transform"]; got != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform %v", got)
	}
}

func toFloat(v any) float64 {
	f, _ := strconv.ParseFloat(scalarString(v), 64)
	return f
}

// TestLogging: JSON logs filtered at the levels the parameters give, into log
// groups named as Lambda names them (/aws/lambda/<function name>), which the
// stack owns with a retention.
func TestLogging(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	// WARN drops the metric lines, which the MetricsNeedInfoLogs rule allows only without metrics.
	tpl := open(t, map[string]string{"LogRetentionDays": "14", "ApplicationLogLevel": "WARN", "Metrics": "false"})
	for fn, group := range map[string]string{"TilesFunction": "TilesLogGroup", "SyncWorker": "WorkerLogGroup"} {
		t.Run(fn, func(t *testing.T) {
			lc := at(t, rawTpl, "Resources", fn, "Properties", "LoggingConfig")
			for key, want := range map[string]any{
				"LogFormat":           "JSON",
				"ApplicationLogLevel": map[string]any{"Ref": "ApplicationLogLevel"},
				"SystemLogLevel":      map[string]any{"Ref": "SystemLogLevel"},
				"LogGroup":            map[string]any{"Ref": group},
			} {
				if got := at(t, lc, key); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("LoggingConfig.%s %v, want %v", key, got, want)
				}
			}
			f := function(t, tpl, fn)
			lg, err := tpl.GetLogsLogGroupWithName(group)
			if err != nil {
				t.Fatal(err)
			}
			if deref(f.FunctionName) == "" || deref(lg.LogGroupName) != "/aws/lambda/"+deref(f.FunctionName) {
				t.Errorf("log group %q for function %q, want /aws/lambda/<function name>", deref(lg.LogGroupName), deref(f.FunctionName))
			}
			if deref(lg.RetentionInDays) != 14 {
				t.Errorf("retention %d, want LogRetentionDays (14)", deref(lg.RetentionInDays))
			}
			if got := f.Environment.Variables["LOG_LEVEL"]; got != "warn" {
				t.Errorf("LOG_LEVEL %q, want warn (from ApplicationLogLevel WARN)", got)
			}
		})
	}
	if got := strs(t, allowedValues(t, rawTpl, "SystemLogLevel")); !slices.Equal(got, []string{"DEBUG", "INFO", "WARN"}) {
		t.Errorf("SystemLogLevel allows %v", got)
	}
}

// TestGlobals: what both functions share is said once.
func TestGlobals(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Globals struct {
			Function map[string]any `yaml:"Function"`
		} `yaml:"Globals"`
		Resources map[string]struct {
			Properties map[string]any `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"CodeUri", "Handler", "Runtime", "Architectures", "LoggingConfig", "Environment"} {
		if _, ok := doc.Globals.Function[key]; !ok {
			t.Errorf("Globals.Function has no %s", key)
		}
	}
	for _, fn := range []string{"TilesFunction", "SyncWorker"} {
		for _, key := range []string{"CodeUri", "Handler", "Runtime", "Architectures"} {
			if _, ok := doc.Resources[fn].Properties[key]; ok {
				t.Errorf("%s repeats %s, which Globals sets", fn, key)
			}
		}
	}
}

// TestConcurrency: the worker has no reserved concurrency (its event source
// mapping would throttle into it); the mapping's MaximumConcurrency bounds it
// instead, at least 2 as AWS requires. The tile function reserves concurrency
// only when asked.
func TestConcurrency(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	if got := function(t, open(t, nil), "SyncWorker").ReservedConcurrentExecutions; got != nil {
		t.Errorf("worker reserves %d, want none", *got)
	}
	// goformation does not model ScalingConfig: read it as written (the
	// SAM-transformed mapping is checked in TestTransformed).
	sc := at(t, rawTpl, "Resources", "SyncWorker", "Properties", "Events", "TileChanges", "Properties", "ScalingConfig", "MaximumConcurrency")
	if fmt.Sprint(sc) != fmt.Sprint(map[string]any{"Ref": "WorkerMaxConcurrency"}) {
		t.Errorf("worker mapping MaximumConcurrency %v, want !Ref WorkerMaxConcurrency", sc)
	}
	if got := at(t, rawTpl, "Parameters", "WorkerMaxConcurrency", "Default"); toFloat(got) != 2 {
		t.Errorf("WorkerMaxConcurrency default %v, want 2", got)
	}
	if got := at(t, rawTpl, "Parameters", "WorkerMaxConcurrency", "MinValue"); toFloat(got) != 2 {
		t.Errorf("WorkerMaxConcurrency MinValue %v, want 2 (the least MaximumConcurrency SQS mappings accept)", got)
	}
	if _, ok := rawTpl["Parameters"].(map[string]any)["WorkerReservedConcurrency"]; ok {
		t.Error("WorkerReservedConcurrency is still a parameter")
	}
	tpl := open(t, nil)
	if got := function(t, tpl, "TilesFunction").ReservedConcurrentExecutions; got != nil {
		t.Errorf("tile function reserves %d by default, want none", *got)
	}
	tpl = open(t, map[string]string{"TilesReservedConcurrency": "250"})
	if got := function(t, tpl, "TilesFunction").ReservedConcurrentExecutions; deref(got) != 250 {
		t.Errorf("tile function reserved concurrency %d, want the parameter's 250", deref(got))
	}
}

// TestTilesTimeoutBehindCdn: behind the CDN the tile function runs no longer
// than CloudFront waits for it; the two come from one parameter.
func TestTilesTimeoutBehindCdn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		params map[string]string
		want   int
	}{
		{with(noCDN, "TilesTimeout", "100"), 100},
		{map[string]string{"TilesTimeout": "100"}, 30},
		{map[string]string{"TilesTimeout": "100", "CreateCdn": "true", "UrlAuthType": "AWS_IAM", "CdnOriginReadTimeout": "45"}, 45},
	} {
		t.Run(fmt.Sprint(sortedPairs(tc.params)), func(t *testing.T) {
			tpl := open(t, tc.params)
			if got := deref(function(t, tpl, "TilesFunction").Timeout); got != tc.want {
				t.Errorf("tile function timeout %d, want %d", got, tc.want)
			}
			if tc.params["CreateCdn"] == "false" {
				return
			}
			d, err := tpl.GetCloudFrontDistributionWithName("Distribution")
			if err != nil {
				t.Fatal(err)
			}
			if got := deref(d.DistributionConfig.Origins[0].CustomOriginConfig.OriginReadTimeout); got != tc.want {
				t.Errorf("origin read timeout %d, function timeout %d: they must agree", got, tc.want)
			}
		})
	}
}
