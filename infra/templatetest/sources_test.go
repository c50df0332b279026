package templatetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/config"
)

// twoSources is a deploy that serves tilesets from two more buckets, one of
// them requester-pays.
var twoSources = map[string]string{
	"Sources":       "osm=s3://alpha-maps/tiles/osm/,sat=s3://beta-open/imagery/?requester-pays",
	"SourceBuckets": "alpha-maps,beta-open",
}

// resolved is SAM's translation of template.yaml with its intrinsics
// resolved as CloudFormation would for params (the rest at their defaults).
func resolved(t *testing.T, params map[string]string) map[string]any {
	t.Helper()
	b, err := json.Marshal(transformedTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	var tpl map[string]any
	if err := json.Unmarshal(b, &tpl); err != nil {
		t.Fatal(err)
	}
	for k, v := range params {
		p, ok := parameters(tpl)[k].(map[string]any)
		if !ok {
			t.Fatalf("no parameter %s", k)
		}
		p["Default"] = v
	}
	r := &resolver{}
	handlers := map[string]func(string, any, any) any{
		"Ref": r.ref, "Fn::GetAtt": r.getAtt, "Fn::Sub": r.sub, "Fn::If": r.fnIf, "Fn::Select": r.selectFn,
		"Fn::Split": r.split, "Fn::Join": r.join, "Fn::FindInMap": r.findInMap,
	}
	var resolve func(v any) any
	resolve = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 1 {
				for k, arg := range x {
					if h, ok := handlers[k]; ok {
						return resolve(h(k, resolve(arg), tpl))
					}
				}
			}
			for k, e := range x {
				x[k] = resolve(e)
			}
		case []any:
			for i, e := range x {
				x[i] = resolve(e)
			}
		}
		return v
	}
	res, _ := tpl["Resources"].(map[string]any)
	for name, v := range res {
		m, _ := v.(map[string]any)
		if c, ok := m["Condition"].(string); ok && !r.condition(c, tpl, 0) {
			delete(res, name)
			continue
		}
		res[name] = resolve(v)
	}
	if r.err != nil {
		t.Fatalf("resolving the translated template with %v: %v", params, r.err)
	}
	return tpl
}

// roleGrants lists a translated role's "action resource" pairs.
func roleGrants(t *testing.T, tpl map[string]any, role string) []string {
	t.Helper()
	var out []string
	pols, _ := at(t, tpl, "Resources", role, "Properties", "Policies").([]any)
	for _, p := range pols {
		for _, s := range policyStatements(t, at(t, p, "PolicyDocument")) {
			for _, a := range asStrings(s["Action"]) {
				for _, r := range asStrings(s["Resource"]) {
					out = append(out, a+" "+r)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestSourcesTwoBuckets: SourceBuckets gives the tile function its reads of
// each bucket, and one EventBridge rule sends the buckets' changes to the
// worker's queue, which lets that rule send; the worker needs no rights on
// them (it maps events, and writes only the journal). Checked on what SAM's
// translator makes of the template.
func TestSourcesTwoBuckets(t *testing.T) {
	t.Parallel()
	tpl := resolved(t, twoSources)
	tiles := roleGrants(t, tpl, "TilesFunctionRole")
	for _, want := range []string{
		"s3:GetObject arn:aws*:s3:::alpha-maps/*",
		"s3:GetObject arn:aws*:s3:::beta-open/*",
		"s3:ListBucket arn:aws*:s3:::alpha-maps",
		"s3:ListBucket arn:aws*:s3:::beta-open",
	} {
		if !slices.Contains(tiles, want) {
			t.Errorf("tile role grants\n%s\nwant %q among them", strings.Join(tiles, "\n"), want)
		}
	}
	for _, g := range roleGrants(t, tpl, "SyncWorkerRole") {
		if strings.Contains(g, "alpha-maps") || strings.Contains(g, "beta-open") {
			t.Errorf("worker grant %q: the worker reads no source", g)
		}
	}
	pattern, _ := json.Marshal(at(t, tpl, "Resources", "SourceChangesRule", "Properties", "EventPattern"))
	if want := `{"detail":{"bucket":{"name":["alpha-maps","beta-open"]}},"detail-type":["Object Created","Object Deleted"],"source":["aws.s3"]}`; string(pattern) != want {
		t.Errorf("event pattern %s, want %s", pattern, want)
	}
	rule := at(t, tpl, "Resources", "SourceChangesRule", "Properties")
	if fmt.Sprint(at(t, rule, "Targets")) != fmt.Sprint([]any{map[string]any{"Arn": getAtt("TileEventsQueue", "Arn"), "Id": "TileEventsQueue"}}) {
		t.Errorf("rule targets %v, want the event queue", at(t, rule, "Targets"))
	}
	ruleARN := "arn:aws:events:eu-west-1:123456789012:rule/" + fmt.Sprint(at(t, rule, "Name"))
	var senders []string
	for _, s := range policyStatements(t, at(t, tpl, "Resources", "TileEventsQueuePolicy", "Properties", "PolicyDocument")) {
		senders = append(senders, fmt.Sprint(at(t, s, "Condition", "ArnEquals", "aws:SourceArn")))
	}
	if want := []string{wantBucketARN, ruleARN}; !slices.Equal(senders, want) {
		t.Errorf("queue senders %q, want %q", senders, want)
	}
	for _, fn := range []string{"TilesFunction", "SyncWorker"} {
		if got := at(t, tpl, "Resources", fn, "Properties", "Environment", "Variables", "SOURCES"); got != twoSources["Sources"] {
			t.Errorf("%s SOURCES %v, want %q", fn, got, twoSources["Sources"])
		}
	}

	// Without sources: no rule, no grants, no sender.
	tpl = resolved(t, nil)
	if _, ok := at(t, tpl, "Resources").(map[string]any)["SourceChangesRule"]; ok {
		t.Error("SourceChangesRule without SourceBuckets")
	}
	if n := len(policyStatements(t, at(t, tpl, "Resources", "TileEventsQueuePolicy", "Properties", "PolicyDocument"))); n != 1 {
		t.Errorf("queue policy has %d statements without sources, want 1", n)
	}
}

// TestSourcesBucketsMatchTheSetting: what the example deploy passes as
// Sources is a SOURCES the functions accept, and SourceBuckets names
// exactly its buckets.
func TestSourcesBucketsMatchTheSetting(t *testing.T) {
	t.Parallel()
	list, err := config.ParseSources(twoSources["Sources"])
	if err != nil {
		t.Fatal(err)
	}
	var buckets []string
	for _, s := range list {
		if !slices.Contains(buckets, s.Bucket) {
			buckets = append(buckets, s.Bucket)
		}
	}
	if got := strings.Join(buckets, ","); got != twoSources["SourceBuckets"] {
		t.Errorf("buckets %q, want SourceBuckets %q", got, twoSources["SourceBuckets"])
	}
	tpl := open(t, twoSources)
	for _, fn := range []string{"TilesFunction", "SyncWorker"} {
		env := function(t, tpl, fn).Environment.Variables
		if env["SOURCES"] != twoSources["Sources"] {
			t.Errorf("%s SOURCES %q, want %q", fn, env["SOURCES"], twoSources["Sources"])
		}
	}
}
