package templatetest

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/intrinsics"
	"gopkg.in/yaml.v3"

	"github.com/tilesieve/tilesieve/infra/internal/yamlnode"
)

// templatePath is template.yaml at the module root, seen from this package's folder.
var templatePath = filepath.Join("..", "..", "template.yaml")

// The pseudo parameters the tests deploy "into".
var pseudo = map[string]string{
	"AWS::AccountId": "123456789012",
	"AWS::Region":    "eu-west-1",
	"AWS::Partition": "aws",
	"AWS::StackName": "tilesieve",
	"AWS::URLSuffix": "amazonaws.com",
	"AWS::StackId":   "arn:aws:cloudformation:eu-west-1:123456789012:stack/tilesieve/00000000-0000-0000-0000-000000000000",
}

const (
	// wantBucket is the bucket name the template derives from the pseudo parameters.
	wantBucket    = "tilesieve-tiles-123456789012-eu-west-1"
	wantBucketARN = "arn:aws:s3:::" + wantBucket
	// fakeFunctionURL stands in for !GetAtt TilesFunctionUrl.FunctionUrl.
	fakeFunctionURL = "https://abcdefghijklmnopqrstuvwxyz234567.lambda-url.eu-west-1.on.aws/"
	fakeURLHost     = "abcdefghijklmnopqrstuvwxyz234567.lambda-url.eu-west-1.on.aws"
)

// ref and getAtt render references to resources, which only exist once deployed, as
// recognisable strings: "Ref(Distribution)", "GetAtt(DeadLetterQueue.Arn)".
func ref(logicalID string) string          { return "Ref(" + logicalID + ")" }
func getAtt(logicalID, attr string) string { return "GetAtt(" + logicalID + "." + attr + ")" }

// goformation registers its YAML tag resolvers in a package-level map on every parse,
// so parses must not run concurrently (the race detector notices otherwise).
var parseMu sync.Mutex

// parsed caches templates by their parameter values; the tests only read them.
var (
	parsedMu sync.Mutex
	parsed   = map[string]*cloudformation.Template{}
)

// open parses template.yaml with the given parameter values (the rest keep their
// defaults), resolving intrinsics the way CloudFormation would for this stack.
func open(t *testing.T, params map[string]string) *cloudformation.Template {
	t.Helper()
	key := fmt.Sprint(sortedPairs(params))
	parsedMu.Lock()
	defer parsedMu.Unlock()
	if tpl, ok := parsed[key]; ok {
		return tpl
	}
	rawTpl := raw(t)
	overrides := map[string]any{}
	for k, v := range params {
		typ, _ := at(t, rawTpl, "Parameters", k).(map[string]any)["Type"].(string)
		if typ == "Number" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("parameter %s=%q is not a number", k, v)
			}
			overrides[k] = f
			continue
		}
		overrides[k] = v
	}
	src, err := goformationInput()
	if err != nil {
		t.Fatal(err)
	}
	r := &resolver{}
	opts := &intrinsics.ProcessorOptions{
		ParameterOverrides: overrides,
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
			"Ref":           r.ref,
			"Fn::GetAtt":    r.getAtt,
			"Fn::Sub":       r.sub,
			"Fn::If":        r.fnIf,
			"Fn::Select":    r.selectFn,
			"Fn::Split":     r.split,
			"Fn::Join":      r.join,
			"Fn::FindInMap": r.findInMap,
		},
	}
	parseMu.Lock()
	tpl, err := goformation.ParseYAMLWithOptions(src, opts)
	parseMu.Unlock()
	if err != nil {
		t.Fatalf("goformation: %v", err)
	}
	if r.err != nil {
		t.Fatalf("resolving intrinsics with %v: %v", params, r.err)
	}
	parsed[key] = tpl
	return tpl
}

// goformationUnknown lists, by resource type, the properties that goformation
// v7 does not model. Its resource decoders reject unknown fields, so these are cut
// from the copy goformation parses; the YAML tests check them instead. A property
// added to the template that goformation does not know fails every test until it
// is listed here (and checked through raw).
var goformationUnknown = map[string][]string{
	"AWS::Serverless::Function": {"LoggingConfig"},
	"AWS::Lambda::Permission":   {"InvokedViaFunctionUrl"},
}

// goformationInput is template.yaml with SAM's Globals merged into each
// serverless function (goformation does not apply them) and without the
// properties goformation rejects.
var goformationInput = sync.OnceValues(func() ([]byte, error) {
	top, err := templateNode()
	if err != nil {
		return nil, err
	}
	resources := yamlnode.Value(top, "Resources")
	if resources == nil {
		return nil, fmt.Errorf("template.yaml has no Resources")
	}
	fnGlobals := yamlnode.Value(yamlnode.Value(top, "Globals"), "Function")
	deleteKey(top, "Globals")
	for i := 0; i+1 < len(resources.Content); i += 2 {
		res := resources.Content[i+1]
		typ := yamlnode.Value(res, "Type")
		props := yamlnode.Value(res, "Properties")
		if typ == nil || props == nil {
			continue
		}
		if typ.Value == "AWS::Serverless::Function" && fnGlobals != nil {
			mergeNode(fnGlobals, props)
		}
		for _, drop := range goformationUnknown[typ.Value] {
			deleteKey(props, drop)
		}
	}
	return yaml.Marshal(top)
})

// mergeNode merges the mapping global into local as SAM merges Globals (see
// mergeGlobals): maps key by key, lists concatenated, local scalars win.
func mergeNode(global, local *yaml.Node) {
	for i := 0; i+1 < len(global.Content); i += 2 {
		k, gv := global.Content[i], global.Content[i+1]
		lv := yamlnode.Value(local, k.Value)
		switch {
		case lv == nil:
			local.Content = append(local.Content, k, gv)
		case gv.Kind == yaml.MappingNode && lv.Kind == yaml.MappingNode && gv.Tag == lv.Tag:
			mergeNode(gv, lv)
		case gv.Kind == yaml.SequenceNode && lv.Kind == yaml.SequenceNode && gv.Tag == lv.Tag:
			lv.Content = append(append([]*yaml.Node{}, gv.Content...), lv.Content...)
		}
	}
}

func deleteKey(n *yaml.Node, key string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			return
		}
	}
}

func sortedPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// resolver implements the intrinsic functions against the raw template that
// goformation hands to each handler (parameter defaults already overridden).
type resolver struct {
	err error // first problem met; goformation's handlers cannot return errors
}

func (r *resolver) fail(format string, args ...any) any {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
	return nil
}

func parameters(template any) map[string]any {
	tpl, _ := template.(map[string]any)
	params, _ := tpl["Parameters"].(map[string]any)
	return params
}

// paramValue is the value of a parameter: its (overridden) default, a list for
// CommaDelimitedList parameters.
func paramValue(template any, name string) (any, bool) {
	p, ok := parameters(template)[name].(map[string]any)
	if !ok {
		return nil, false
	}
	def, ok := p["Default"]
	if !ok {
		return nil, false
	}
	if p["Type"] == "CommaDelimitedList" {
		s := fmt.Sprint(def)
		var out []any
		for part := range strings.SplitSeq(s, ",") {
			out = append(out, strings.TrimSpace(part))
		}
		return out, true
	}
	return def, true
}

func (r *resolver) lookup(name string, template any) any {
	if name == "AWS::NoValue" {
		return nil
	}
	if v, ok := pseudo[name]; ok {
		return v
	}
	if v, ok := paramValue(template, name); ok {
		return v
	}
	tpl, _ := template.(map[string]any)
	if res, _ := tpl["Resources"].(map[string]any); res != nil {
		if _, ok := res[name]; ok {
			return ref(name)
		}
	}
	// SAM-generated resources (TilesFunctionUrl, TilesFunctionRole, ...).
	for _, suffix := range []string{"Url", "Role"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if res, _ := tpl["Resources"].(map[string]any); res != nil && res[base] != nil {
				return ref(name)
			}
		}
	}
	return r.fail("Ref to unknown name %q", name)
}

func (r *resolver) ref(_ string, input any, template any) any {
	name, ok := input.(string)
	if !ok {
		return r.fail("Ref of %T", input)
	}
	return r.lookup(name, template)
}

func (r *resolver) attribute(id, attr string) any {
	if id == "TilesFunctionUrl" && attr == "FunctionUrl" {
		return fakeFunctionURL
	}
	return getAtt(id, attr)
}

func (r *resolver) getAtt(_ string, input any, _ any) any {
	switch v := input.(type) {
	case string:
		id, attr, ok := strings.Cut(v, ".")
		if !ok {
			return r.fail("GetAtt %q", v)
		}
		return r.attribute(id, attr)
	case []any:
		if len(v) == 2 {
			return r.attribute(fmt.Sprint(v[0]), fmt.Sprint(v[1]))
		}
	}
	return r.fail("GetAtt of %v", input)
}

var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

func (r *resolver) sub(_ string, input any, template any) any {
	var src string
	vars := map[string]any{}
	switch v := input.(type) {
	case string:
		src = v
	case []any:
		if len(v) != 2 {
			return r.fail("Sub of %v", v)
		}
		src, _ = v[0].(string)
		m, _ := v[1].(map[string]any)
		maps.Copy(vars, m)
	default:
		return r.fail("Sub of %T", input)
	}
	return subVar.ReplaceAllStringFunc(src, func(m string) string {
		name := m[2 : len(m)-1]
		if strings.HasPrefix(name, "!") { // ${!Literal}
			return "${" + name[1:] + "}"
		}
		var val any
		if v, ok := vars[name]; ok {
			val = v
		} else if id, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
			val = r.attribute(id, attr)
		} else {
			val = r.lookup(name, template)
		}
		return scalarString(val)
	})
}

func scalarString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(v)
}

func (r *resolver) fnIf(_ string, input any, template any) any {
	args, ok := input.([]any)
	if !ok || len(args) != 3 {
		return r.fail("If of %v", input)
	}
	name, _ := args[0].(string)
	if r.condition(name, template, 0) {
		return args[1]
	}
	return args[2]
}

// condition evaluates a named condition of the raw template.
func (r *resolver) condition(name string, template any, depth int) bool {
	tpl, _ := template.(map[string]any)
	conds, _ := tpl["Conditions"].(map[string]any)
	expr, ok := conds[name]
	if !ok || depth > 10 {
		r.fail("unknown or cyclic condition %q", name)
		return false
	}
	b, ok := r.evalBool(expr, template, depth+1)
	if !ok {
		r.fail("condition %q: cannot evaluate %v", name, expr)
	}
	return b
}

func (r *resolver) evalBool(expr any, template any, depth int) (bool, bool) {
	switch v := expr.(type) {
	case bool:
		return v, true
	case map[string]any:
		if len(v) != 1 {
			return false, false
		}
		for fn, arg := range v {
			args, _ := arg.([]any)
			switch fn {
			case "Condition":
				s, _ := arg.(string)
				return r.condition(s, template, depth), true
			case "Fn::Equals":
				if len(args) != 2 {
					return false, false
				}
				return scalarString(r.evalValue(args[0], template)) == scalarString(r.evalValue(args[1], template)), true
			case "Fn::Not":
				if len(args) != 1 {
					return false, false
				}
				b, ok := r.evalBool(args[0], template, depth)
				return !b, ok
			case "Fn::And", "Fn::Or":
				and := fn == "Fn::And"
				acc := and
				for _, a := range args {
					b, ok := r.evalBool(a, template, depth)
					if !ok {
						return false, false
					}
					if and {
						acc = acc && b
					} else {
						acc = acc || b
					}
				}
				return acc, true
			}
		}
	}
	return false, false
}

// evalValue evaluates the operands of a condition (Ref and Join are enough here).
func (r *resolver) evalValue(v any, template any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if name, ok := m["Ref"].(string); ok {
		return r.lookup(name, template)
	}
	if args, ok := m["Fn::Join"].([]any); ok && len(args) == 2 {
		return r.join("Fn::Join", []any{args[0], r.evalValue(args[1], template)}, template)
	}
	return r.fail("condition operand %v", v)
}

func (r *resolver) join(_ string, input any, _ any) any {
	args, ok := input.([]any)
	if !ok || len(args) != 2 {
		return r.fail("Join of %v", input)
	}
	list, ok := args[1].([]any)
	if !ok {
		return r.fail("Join of a %T", args[1])
	}
	parts := make([]string, len(list))
	for i, p := range list {
		parts[i] = scalarString(p)
	}
	return strings.Join(parts, scalarString(args[0]))
}

func (r *resolver) split(_ string, input any, _ any) any {
	args, ok := input.([]any)
	if !ok || len(args) != 2 {
		return r.fail("Split of %v", input)
	}
	var out []any
	for _, s := range strings.Split(scalarString(args[1]), scalarString(args[0])) {
		out = append(out, s)
	}
	return out
}

// findInMap looks a value up in the raw template's Mappings; keys compare
// as strings, as CloudFormation compares them (a Number parameter's value
// is a string there).
func (r *resolver) findInMap(_ string, input any, template any) any {
	args, ok := input.([]any)
	if !ok || len(args) != 3 {
		return r.fail("FindInMap of %v", input)
	}
	tpl, _ := template.(map[string]any)
	mappings, _ := tpl["Mappings"].(map[string]any)
	m, _ := mappings[scalarString(args[0])].(map[string]any)
	top, _ := m[scalarString(args[1])].(map[string]any)
	v, ok := top[scalarString(args[2])]
	if !ok {
		return r.fail("FindInMap %v: no such entry", args)
	}
	return v
}

func (r *resolver) selectFn(_ string, input any, _ any) any {
	args, ok := input.([]any)
	if !ok || len(args) != 2 {
		return r.fail("Select of %v", input)
	}
	i, err := strconv.Atoi(scalarString(args[0]))
	list, ok := args[1].([]any)
	if err != nil || !ok || i < 0 || i >= len(list) {
		return r.fail("Select %v from %v", args[0], args[1])
	}
	return list[i]
}
