package templatetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/awslabs/goformation/v7/cloudformation"

	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/testkit/tooltest"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// viewerRequestJS is the CloudFront Function's source, inlined into the template.
var viewerRequestJS = filepath.Join("..", "cdn", "viewer-request.js")

// stackUUID is the last part of the pseudo AWS::StackId: the CDN secret.
const stackUUID = "00000000-0000-0000-0000-000000000000"

// TestViewerRequestFunction: the distribution runs the viewer-request
// function on every behaviour, its inline code is infra/cdn/viewer-request.js
// byte for byte, and the origin carries the secret the tile function checks
// before it believes X-Forwarded-Host.
func TestViewerRequestFunction(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(viewerRequestJS)
	if err != nil {
		t.Fatal(err)
	}
	rawTpl := raw(t)
	fn := at(t, rawTpl, "Resources", "ViewerRequestFunction")
	if got := at(t, fn, "Condition"); got != "CreateCdn" {
		t.Errorf("ViewerRequestFunction condition %v, want CreateCdn", got)
	}
	if got := at(t, fn, "Properties", "FunctionCode"); got != string(src) {
		t.Errorf("inline FunctionCode differs from %s:\n%v\nwant\n%s", viewerRequestJS, got, src)
	}
	if got := at(t, fn, "Properties", "FunctionConfig", "Runtime"); got != "cloudfront-js-2.0" {
		t.Errorf("runtime %v, want cloudfront-js-2.0", got)
	}
	if got := at(t, fn, "Properties", "AutoPublish"); got != true {
		t.Errorf("AutoPublish %v, want true (the distribution runs the published stage)", got)
	}

	tpl := open(t, nil)
	d, err := tpl.GetCloudFrontDistributionWithName("Distribution")
	if err != nil {
		t.Fatal(err)
	}
	arn := getAtt("ViewerRequestFunction", "FunctionMetadata.FunctionARN")
	cfg := d.DistributionConfig
	behaviours := map[string][]string{}
	for _, a := range cfg.DefaultCacheBehavior.FunctionAssociations {
		behaviours["default"] = append(behaviours["default"], deref(a.EventType)+" "+deref(a.FunctionARN))
	}
	for _, b := range cfg.CacheBehaviors {
		for _, a := range b.FunctionAssociations {
			behaviours[b.PathPattern] = append(behaviours[b.PathPattern], deref(a.EventType)+" "+deref(a.FunctionARN))
		}
	}
	want := []string{"viewer-request " + arn}
	for _, name := range []string{"default", "/_tilesieve/*"} {
		if !slices.Equal(behaviours[name], want) {
			t.Errorf("behaviour %s runs %v, want %v", name, behaviours[name], want)
		}
	}

	o := cfg.Origins[0]
	if len(o.OriginCustomHeaders) != 1 || o.OriginCustomHeaders[0].HeaderName != tileserver.CDNSecretHeader || o.OriginCustomHeaders[0].HeaderValue != stackUUID {
		t.Errorf("origin custom headers %+v, want %s: the stack's UUID", o.OriginCustomHeaders, tileserver.CDNSecretHeader)
	}
	if got := function(t, tpl, "TilesFunction").Environment.Variables["CDN_SECRET"]; got != stackUUID {
		t.Errorf("CDN_SECRET %q, want the origin header's value %q", got, stackUUID)
	}
	// Without the CDN nobody may name the host.
	if got := function(t, open(t, noCDN), "TilesFunction").Environment.Variables["CDN_SECRET"]; got != "" {
		t.Errorf("CDN_SECRET %q without the CDN, want empty", got)
	}
}

// TestViewerRequestFunctionUnderNode runs the function's own code under Node
// with CloudFront's event shape (infra/cdn/viewer-request.test.js).
func TestViewerRequestFunctionUnderNode(t *testing.T) {
	t.Parallel()
	node := tooltest.Node.Path(t)
	out, err := exec.Command(node, filepath.Join("..", "cdn", "viewer-request.test.js")).CombinedOutput()
	t.Logf("node viewer-request.test.js:\n%s", out)
	if err != nil {
		t.Fatalf("node: %v", err)
	}
}

// TestCdnIsTheDefault: a plain deploy creates the distribution in front of an
// IAM-only URL; a public URL without the CDN needs both parameters changed.
func TestCdnIsTheDefault(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	for param, want := range map[string]string{"CreateCdn": "true", "UrlAuthType": "AWS_IAM"} {
		if got := at(t, rawTpl, "Parameters", param, "Default"); got != want {
			t.Errorf("%s default %v, want %s", param, got, want)
		}
	}
	def := open(t, nil)
	if _, err := def.GetCloudFrontDistributionWithName("Distribution"); err != nil {
		t.Errorf("no distribution by default: %v", err)
	}
	for _, name := range []string{"TilesFunctionUrlPublicInvokeUrl", "TilesFunctionUrlPublicInvoke"} {
		if got := at(t, rawTpl, "Resources", name, "Condition"); got != "UrlIsPublic" {
			t.Errorf("%s condition %v, want UrlIsPublic", name, got)
		}
	}
	if got := function(t, open(t, noCDN), "TilesFunction").FunctionUrlConfig.AuthType; got != "NONE" {
		t.Errorf("opt-out URL auth %q, want NONE", got)
	}
}

// TestSamconfigHasNoParameterLists: SAM CLI replaces a config file's
// parameter_overrides with the command line's (aws-sam-cli #2380), so the
// defaults live in the template and samconfig.toml lists no parameters a
// deploy could need: one --parameter-overrides can then drop nothing.
func TestSamconfigHasNoParameterLists(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("..", "..", "samconfig.toml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if strings.HasPrefix(line, "parameter_overrides") && strings.HasSuffix(section, ".deploy.parameters]") {
			t.Errorf("%s sets parameter_overrides: %s", section, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestExistingBucket: with ExistingBucket the stack creates no bucket, the
// functions use the given one, and its changes under TilesPrefix reach the
// same queue through an EventBridge rule that only this stack's rule may use.
func TestExistingBucket(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	if got := at(t, rawTpl, "Resources", "TilesBucket", "Condition"); got != "OwnBucket" {
		t.Errorf("TilesBucket condition %v, want OwnBucket", got)
	}
	if got := at(t, rawTpl, "Resources", "ExistingBucketChangesRule", "Condition"); got != "ExistingBucketGiven" {
		t.Errorf("rule condition %v, want ExistingBucketGiven", got)
	}
	tpl := open(t, map[string]string{"ExistingBucket": "my-maps", "TilesPrefix": "maps/tiles/"})
	for _, fn := range []string{"TilesFunction", "SyncWorker"} {
		if got := function(t, tpl, fn).Environment.Variables["TILES_BUCKET"]; got != "my-maps" {
			t.Errorf("%s TILES_BUCKET %q, want my-maps", fn, got)
		}
	}
	rule, err := tpl.GetEventsRuleWithName("ExistingBucketChangesRule")
	if err != nil {
		t.Fatal(err)
	}
	pattern, _ := json.Marshal(rule.EventPattern)
	wantPattern := `{"detail":{"bucket":{"name":["my-maps"]},"object":{"key":[{"prefix":"maps/tiles/"}]}},"detail-type":["Object Created","Object Deleted"],"source":["aws.s3"]}`
	if string(pattern) != wantPattern {
		t.Errorf("event pattern %s, want %s", pattern, wantPattern)
	}
	if len(rule.Targets) != 1 || rule.Targets[0].Arn != getAtt("TileEventsQueue", "Arn") {
		t.Errorf("rule targets %+v, want the event queue", rule.Targets)
	}
	ruleARN := "arn:aws:events:eu-west-1:123456789012:rule/" + deref(rule.Name)
	qp, err := tpl.GetSQSQueuePolicyWithName("TileEventsQueuePolicy")
	if err != nil {
		t.Fatal(err)
	}
	stmts := policyStatements(t, qp.PolicyDocument)
	if len(stmts) != 1 {
		t.Fatalf("queue policy statements %v, want one", stmts)
	}
	s := stmts[0]
	src := fmt.Sprint(at(t, s, "Condition", "ArnEquals", "aws:SourceArn"))
	if at(t, s, "Principal", "Service") != "events.amazonaws.com" || at(t, s, "Action") != "sqs:SendMessage" || src != ruleARN {
		t.Errorf("queue policy %v, want events.amazonaws.com sending from %s only", s, ruleARN)
	}
	if out := fmt.Sprint(tpl.Outputs["TilesBucketName"].Value); out != "my-maps" {
		t.Errorf("TilesBucketName output %v, want my-maps", out)
	}
	if out := fmt.Sprint(tpl.Outputs["TilesUploadPrefix"].Value); out != "s3://my-maps/maps/tiles/" {
		t.Errorf("TilesUploadPrefix output %v", out)
	}

	// The stack's own bucket: S3 sends, from that bucket only.
	stmts = policyStatements(t, mustQueuePolicy(t, open(t, nil)))
	if len(stmts) != 1 || at(t, stmts[0], "Principal", "Service") != "s3.amazonaws.com" ||
		fmt.Sprint(at(t, stmts[0], "Condition", "ArnEquals", "aws:SourceArn")) != wantBucketARN {
		t.Errorf("queue policy of the stack's bucket %v", stmts)
	}
}

func mustQueuePolicy(t *testing.T, tpl *cloudformation.Template) any {
	t.Helper()
	qp, err := tpl.GetSQSQueuePolicyWithName("TileEventsQueuePolicy")
	if err != nil {
		t.Fatal(err)
	}
	return qp.PolicyDocument
}

func policyStatements(t *testing.T, doc any) []map[string]any {
	t.Helper()
	m, _ := doc.(map[string]any)
	list, _ := m["Statement"].([]any)
	var out []map[string]any
	for _, s := range list {
		if s == nil { // AWS::NoValue
			continue
		}
		sm, ok := s.(map[string]any)
		if !ok {
			t.Fatalf("statement %v is a %T", s, s)
		}
		out = append(out, sm)
	}
	return out
}

// TestCustomDomain: Aliases and a us-east-1 certificate give the distribution
// its names, and the first becomes PUBLIC_URL unless PublicUrl is set.
func TestCustomDomain(t *testing.T) {
	t.Parallel()
	const cert = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-0000-1111-2222-333344445555"
	for _, tc := range []struct {
		name       string
		params     map[string]string
		wantPublic string
		aliases    []string
	}{
		{"no domain", nil, "", nil},
		{"aliases", map[string]string{"Aliases": "tiles.example.com,maps.example.com", "AcmCertificateArn": cert},
			"https://tiles.example.com", []string{"tiles.example.com", "maps.example.com"}},
		{"PublicUrl wins", map[string]string{"Aliases": "tiles.example.com", "AcmCertificateArn": cert, "PublicUrl": "https://example.org/tiles"},
			"https://example.org/tiles", []string{"tiles.example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tpl := open(t, tc.params)
			if got := function(t, tpl, "TilesFunction").Environment.Variables["PUBLIC_URL"]; got != tc.wantPublic {
				t.Errorf("PUBLIC_URL %q, want %q", got, tc.wantPublic)
			}
			d, err := tpl.GetCloudFrontDistributionWithName("Distribution")
			if err != nil {
				t.Fatal(err)
			}
			cfg := d.DistributionConfig
			if !slices.Equal(cfg.Aliases, tc.aliases) {
				t.Errorf("aliases %v, want %v", cfg.Aliases, tc.aliases)
			}
			vc := cfg.ViewerCertificate
			if tc.aliases == nil {
				if vc == nil || !deref(vc.CloudFrontDefaultCertificate) {
					t.Errorf("viewer certificate %+v, want CloudFront's default", vc)
				}
				return
			}
			if vc == nil || deref(vc.AcmCertificateArn) != cert || deref(vc.SslSupportMethod) != "sni-only" {
				t.Errorf("viewer certificate %+v, want %s over SNI", vc, cert)
			}
		})
	}
	rawTpl := raw(t)
	pat := fmt.Sprint(at(t, rawTpl, "Parameters", "AcmCertificateArn", "AllowedPattern"))
	if !strings.Contains(pat, "acm:us-east-1:") {
		t.Errorf("AcmCertificateArn pattern %s does not require us-east-1", pat)
	}
	rule := fmt.Sprint(at(t, rawTpl, "Rules", "AliasesNeedCertificate", "Assertions"))
	if !strings.Contains(rule, "AcmCertificateArn") || !strings.Contains(rule, "CreateCdn") {
		t.Errorf("AliasesNeedCertificate asserts %s, want the certificate and the CDN", rule)
	}
}

// TestOriginCostsOneInvocation: CloudFront tries a hung origin once, within
// the connection timeout, and waits at most the function's own timeout.
func TestOriginCostsOneInvocation(t *testing.T) {
	t.Parallel()
	d, err := open(t, map[string]string{"CdnOriginReadTimeout": "20"}).GetCloudFrontDistributionWithName("Distribution")
	if err != nil {
		t.Fatal(err)
	}
	o := d.DistributionConfig.Origins[0]
	if deref(o.ConnectionAttempts) != 1 || deref(o.ConnectionTimeout) < 1 || deref(o.ConnectionTimeout) > 10 {
		t.Errorf("connection attempts %d timeout %d, want 1 attempt within 1-10 s", deref(o.ConnectionAttempts), deref(o.ConnectionTimeout))
	}
	if got := deref(o.CustomOriginConfig.OriginReadTimeout); got != 20 {
		t.Errorf("origin read timeout %d, want CdnOriginReadTimeout's 20", got)
	}
	if !deref(d.DistributionConfig.DefaultCacheBehavior.Compress) {
		t.Error("tile behaviour does not compress: JSON documents would go out uncompressed")
	}
}

// TestAlarms: every alarm notifies the one topic; Lambda's errors and
// throttles, the queue's oldest message and the EMF metrics the code writes
// (by their names in shared/obs) are watched.
func TestAlarms(t *testing.T) {
	t.Parallel()
	tpl := open(t, nil)
	type want struct{ ns, metric, dim string }
	wants := map[string]want{
		"TilesErrorsAlarm":            {"AWS/Lambda", "Errors", ref("TilesFunction")},
		"TilesThrottlesAlarm":         {"AWS/Lambda", "Throttles", ref("TilesFunction")},
		"WorkerErrorsAlarm":           {"AWS/Lambda", "Errors", ref("SyncWorker")},
		"TileEventsAgeAlarm":          {"AWS/SQS", "ApproximateAgeOfOldestMessage", getAtt("TileEventsQueue", "QueueName")},
		"DeadLetterQueueAlarm":        {"AWS/SQS", "ApproximateNumberOfMessagesVisible", getAtt("DeadLetterQueue", "QueueName")},
		"OriginErrorsAlarm":           {"tilesieve", obs.MetricOriginErrors, ref("TilesFunction")},
		"JournalCheckErrorsAlarm":     {"tilesieve", obs.MetricJournalCheckErrors, ref("TilesFunction")},
		"InvalidationsThrottledAlarm": {"tilesieve", obs.MetricInvalidationsThrottled, ref("SyncWorker")},
	}
	n := 0
	for name := range tpl.GetAllCloudWatchAlarmResources() {
		n++
		if _, ok := wants[name]; !ok {
			t.Errorf("alarm %s is not checked here", name)
		}
	}
	if n != len(wants) {
		t.Errorf("%d alarms, want %d", n, len(wants))
	}
	for name, w := range wants {
		a, err := tpl.GetCloudWatchAlarmWithName(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if deref(a.Namespace) != w.ns || deref(a.MetricName) != w.metric || len(a.Dimensions) != 1 || a.Dimensions[0].Value != w.dim {
			t.Errorf("%s watches %s/%s %+v, want %s/%s on %s", name, deref(a.Namespace), deref(a.MetricName), a.Dimensions, w.ns, w.metric, w.dim)
		}
		if !slices.Equal(a.AlarmActions, []string{ref("AlarmTopic")}) || !slices.Equal(a.OKActions, []string{ref("AlarmTopic")}) {
			t.Errorf("%s notifies %v / %v, want the topic", name, a.AlarmActions, a.OKActions)
		}
	}
	if age, err := tpl.GetCloudWatchAlarmWithName("TileEventsAgeAlarm"); err != nil || deref(age.Threshold) != 2*60+60 {
		t.Errorf("oldest-message alarm %+v (%v), want a threshold of twice WorkerTimeout (60) plus a minute", age, err)
	}
	if n := len(tpl.GetAllSNSTopicResources()); n != 1 {
		t.Errorf("%d SNS topics, want one", n)
	}
	// Without metrics, no alarm waits for lines nobody writes.
	for _, name := range []string{"OriginErrorsAlarm", "JournalCheckErrorsAlarm", "InvalidationsThrottledAlarm", "Dashboard"} {
		if got := at(t, raw(t), "Resources", name, "Condition"); got != "MetricsOn" {
			t.Errorf("%s condition %v, want MetricsOn", name, got)
		}
	}
}

// TestDashboard: the dashboard body is valid JSON once substituted and shows
// the EMF metrics of both functions under their names in shared/obs.
func TestDashboard(t *testing.T) {
	t.Parallel()
	tpl := open(t, map[string]string{"MetricsNamespace": "maps/prod"})
	d, err := tpl.GetCloudWatchDashboardWithName("Dashboard")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Widgets []struct {
			Properties struct {
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(d.DashboardBody), &body); err != nil {
		t.Fatalf("dashboard body is not JSON: %v\n%s", err, d.DashboardBody)
	}
	shown := map[string]string{}
	for _, w := range body.Widgets {
		for _, m := range w.Properties.Metrics {
			if len(m) < 4 || m[0] != "maps/prod" || m[2] != "FunctionName" {
				t.Errorf("metric %v: want [namespace, name, FunctionName, function]", m)
				continue
			}
			shown[fmt.Sprint(m[1])] = fmt.Sprint(m[3])
		}
	}
	for metric, fn := range map[string]string{
		obs.MetricRequestsMemory: ref("TilesFunction"), obs.MetricRequestsMiss: ref("TilesFunction"),
		obs.MetricOriginErrors: ref("TilesFunction"), obs.MetricJournalCheckErrors: ref("TilesFunction"),
		obs.MetricRequestLatency: ref("TilesFunction"), obs.MetricPurgesApplied: ref("TilesFunction"),
		obs.MetricInvalidationsThrottled: ref("SyncWorker"), obs.MetricInvalidationsIssued: ref("SyncWorker"),
		obs.MetricJournalAppendErrors: ref("SyncWorker"), obs.MetricNotifications: ref("SyncWorker"),
	} {
		if shown[metric] != fn {
			t.Errorf("dashboard shows %s for %q, want %s", metric, shown[metric], fn)
		}
	}
}

// TestDeletionPolicies: the bucket (data) is kept; queues and log groups say
// explicitly that they go with the stack; no lifecycle rule names the journal.
func TestDeletionPolicies(t *testing.T) {
	t.Parallel()
	rawTpl := raw(t)
	for name, want := range map[string]string{
		"TilesBucket": "Retain", "TileEventsQueue": "Delete", "DeadLetterQueue": "Delete",
		"TilesLogGroup": "Delete", "WorkerLogGroup": "Delete",
	} {
		for _, key := range []string{"DeletionPolicy", "UpdateReplacePolicy"} {
			if got := at(t, rawTpl, "Resources", name, key); got != want {
				t.Errorf("%s %s %v, want %s", name, key, got, want)
			}
		}
	}
	b, err := open(t, nil).GetS3BucketWithName("TilesBucket")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range b.LifecycleConfiguration.Rules {
		if strings.Contains(strings.ToLower(deref(r.Id)), "journal") || strings.Contains(deref(r.Prefix), "_tilesieve") {
			t.Errorf("lifecycle rule %s (prefix %q): the journal has no expiring entries", deref(r.Id), deref(r.Prefix))
		}
	}
}

// TestMaxReceiveCount: without throttled deliveries a notification is
// received again only after a failed batch; a few retries, then the DLQ.
func TestMaxReceiveCount(t *testing.T) {
	t.Parallel()
	q, err := open(t, nil).GetSQSQueueWithName("TileEventsQueue")
	if err != nil {
		t.Fatal(err)
	}
	rp, _ := q.RedrivePolicy.(map[string]any)
	if got := toFloat(rp["maxReceiveCount"]); got < 3 || got > 10 {
		t.Errorf("maxReceiveCount %v, want 3-10", got)
	}
}

// transformed is template.yaml as SAM's own translator (aws-sam-translator,
// the Python package cfn-lint uses) turns it into CloudFormation.
var transformed = sync.OnceValues(func() (map[string]any, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil, errNoTranslator
	}
	if exec.Command(py, "-c", "import samtranslator").Run() != nil {
		return nil, errNoTranslator
	}
	cmd := exec.Command(py, filepath.Join("testdata", "sam_transform.py"), templatePath)
	cmd.Env = append(os.Environ(), "AWS_DEFAULT_REGION=eu-west-1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sam_transform.py: %w\n%s", err, stderr.Bytes())
	}
	var tpl map[string]any
	if err := json.Unmarshal(out, &tpl); err != nil {
		return nil, fmt.Errorf("sam_transform.py output: %w", err)
	}
	return tpl, nil
})

var errNoTranslator = errors.New("python3 with aws-sam-translator not installed")

func transformedTemplate(t *testing.T) map[string]any {
	t.Helper()
	tpl, err := transformed()
	if errors.Is(err, errNoTranslator) {
		tooltest.SAMTranslator.Missing(t)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// TestTransformed checks what SAM makes of the template: no grant on every
// resource, no role but the two explicit ones, no managed policy (SAM's
// AWSLambdaBasicExecutionRole and AWSLambdaSQSQueueExecutionRole), and the
// worker's mapping bounded by MaximumConcurrency.
func TestTransformed(t *testing.T) {
	t.Parallel()
	tpl := transformedTemplate(t)
	resources, _ := tpl["Resources"].(map[string]any)
	if len(resources) == 0 {
		t.Fatal("transformed template has no resources")
	}
	walk(tpl, "", func(path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, key := range []string{"Resource", "NotResource"} {
			for _, r := range asStrings(m[key]) {
				if r == "*" || strings.HasSuffix(r, ":*:*") {
					t.Errorf("%s: %s %q", path, key, r)
				}
			}
		}
		if _, ok := m["ManagedPolicyArns"]; ok {
			t.Errorf("%s: ManagedPolicyArns %v", path, m["ManagedPolicyArns"])
		}
	})
	var roles []string
	for name, r := range resources {
		res := r.(map[string]any)
		if res["Type"] == "AWS::IAM::Role" {
			roles = append(roles, name)
		}
	}
	slices.Sort(roles)
	if want := []string{"SyncWorkerRole", "TilesFunctionRole"}; !slices.Equal(roles, want) {
		t.Errorf("roles %v, want %v", roles, want)
	}
	for fn, role := range map[string]string{"TilesFunction": "TilesFunctionRole", "SyncWorker": "SyncWorkerRole"} {
		got := at(t, resources, fn, "Properties", "Role")
		if fmt.Sprint(got) != fmt.Sprint(map[string]any{"Fn::GetAtt": []any{role, "Arn"}}) {
			t.Errorf("%s role %v, want %s", fn, got, role)
		}
	}
	var mappings []any
	for _, r := range resources {
		if res := r.(map[string]any); res["Type"] == "AWS::Lambda::EventSourceMapping" {
			mappings = append(mappings, res)
		}
	}
	if len(mappings) != 1 {
		t.Fatalf("%d event source mappings, want 1", len(mappings))
	}
	if got := at(t, mappings[0], "Properties", "ScalingConfig", "MaximumConcurrency"); fmt.Sprint(got) != fmt.Sprint(map[string]any{"Ref": "WorkerMaxConcurrency"}) {
		t.Errorf("mapping MaximumConcurrency %v, want !Ref WorkerMaxConcurrency", got)
	}
	if got, ok := at(t, resources, "SyncWorker", "Properties").(map[string]any)["ReservedConcurrentExecutions"]; ok {
		t.Errorf("worker reserves concurrency %v", got)
	}
}
