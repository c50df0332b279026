package templatetest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// rawTemplate is template.yaml as plain data, with SAM's Globals merged into each
// serverless function the way SAM merges them. Short-form intrinsics (!Ref X,
// !Sub s, !GetAtt A.B, !If [...]) become their long forms ({"Ref": "X"},
// {"Fn::Sub": s}, {"Fn::GetAtt": ["A", "B"]}, {"Fn::If": [...]}), so both
// spellings compare equal.
var rawTemplate = sync.OnceValues(func() (map[string]any, error) {
	top, err := templateNode()
	if err != nil {
		return nil, err
	}
	v, err := decodeNode(top)
	if err != nil {
		return nil, err
	}
	tpl, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("template.yaml: top level is %T", v)
	}
	mergeGlobals(tpl)
	return tpl, nil
})

// templateNode is template.yaml's one document, parsed afresh (callers may
// change it).
func templateNode() (*yaml.Node, error) {
	b, err := os.ReadFile(templatePath)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 {
		return nil, fmt.Errorf("template.yaml: want one YAML document")
	}
	return doc.Content[0], nil
}

func raw(t *testing.T) map[string]any {
	t.Helper()
	tpl, err := rawTemplate()
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// decodeNode turns a YAML node into maps, slices and scalars, accepting
// CloudFormation's short-form tags.
func decodeNode(n *yaml.Node) (any, error) {
	var v any
	switch n.Kind {
	case yaml.AliasNode:
		return decodeNode(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			val, err := decodeNode(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", n.Content[i].Line, k)
			}
			m[k] = val
		}
		v = m
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := decodeNode(c)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		v = s
	case yaml.ScalarNode:
		v = scalar(n)
	default:
		return nil, fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
	}
	tag := n.Tag
	if !strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "!!") {
		return v, nil
	}
	name := tag[1:]
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			id, attr, _ := strings.Cut(s, ".")
			v = []any{id, attr}
		}
	}
	return map[string]any{"Fn::" + name: v}, nil
}

// scalar keeps strings as strings and gives plain (untagged or core-tagged) numbers
// and booleans their type, as CloudFormation reads them.
func scalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!int":
		if i, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
			return int(i)
		}
	case "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
			return f
		}
	case "!!bool":
		if b, err := strconv.ParseBool(n.Value); err == nil {
			return b
		}
	case "!!null":
		return nil
	}
	return n.Value
}

// mergeGlobals applies Globals.Function to every AWS::Serverless::Function as SAM
// does: maps merge key by key, lists are concatenated (globals first), and the
// function's own scalars win.
func mergeGlobals(tpl map[string]any) {
	globals, _ := tpl["Globals"].(map[string]any)
	fnGlobals, _ := globals["Function"].(map[string]any)
	if fnGlobals == nil {
		return
	}
	resources, _ := tpl["Resources"].(map[string]any)
	for _, r := range resources {
		res, _ := r.(map[string]any)
		if res["Type"] != "AWS::Serverless::Function" {
			continue
		}
		props, _ := res["Properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
			res["Properties"] = props
		}
		res["Properties"] = mergeValue(fnGlobals, props)
	}
}

func mergeValue(global, local any) any {
	switch g := global.(type) {
	case map[string]any:
		l, ok := local.(map[string]any)
		if !ok {
			return local
		}
		out := make(map[string]any, len(g)+len(l))
		for k, v := range g {
			out[k] = v
		}
		for k, v := range l {
			if gv, ok := g[k]; ok {
				out[k] = mergeValue(gv, v)
			} else {
				out[k] = v
			}
		}
		return out
	case []any:
		if l, ok := local.([]any); ok {
			return append(append([]any{}, g...), l...)
		}
	}
	return local
}

// at walks a path of map keys (and "[i]" list indices) in raw data.
func at(t *testing.T, v any, path ...string) any {
	t.Helper()
	cur := v
	for i, p := range path {
		if strings.HasPrefix(p, "[") {
			idx, err := strconv.Atoi(strings.Trim(p, "[]"))
			l, ok := cur.([]any)
			if err != nil || !ok || idx >= len(l) {
				t.Fatalf("%s: no element %s", strings.Join(path[:i], "."), p)
			}
			cur = l[idx]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s is a %T, not a map", strings.Join(path[:i], "."), cur)
		}
		next, ok := m[p]
		if !ok {
			t.Fatalf("%s has no %q", strings.Join(path[:i], "."), p)
		}
		cur = next
	}
	return cur
}

func strs(t *testing.T, v any) []string {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("want a list, got %T %v", v, v)
	}
	out := make([]string, len(l))
	for i, x := range l {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("want strings, got %T %v", x, x)
		}
		out[i] = s
	}
	return out
}

// walk calls fn on every value inside v, with its path.
func walk(v any, path string, fn func(path string, v any)) {
	fn(path, v)
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			walk(x, path+"."+k, fn)
		}
	case []any:
		for i, x := range v {
			walk(x, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
}

func TestDecodeNodeShortForms(t *testing.T) {
	t.Parallel()
	src := `
a: !Ref X
b: !GetAtt Res.Arn
c: !Sub "${AWS::StackName}-x"
d: !If [Cond, !Ref Y, !Ref AWS::NoValue]
e: !Select [2, !Split ["/", !GetAtt U.FunctionUrl]]
f: { Ref: X }
g: 7
h: "7"
i: true
`
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	v, err := decodeNode(doc.Content[0])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"a": map[string]any{"Ref": "X"},
		"b": map[string]any{"Fn::GetAtt": []any{"Res", "Arn"}},
		"c": map[string]any{"Fn::Sub": "${AWS::StackName}-x"},
		"d": map[string]any{"Fn::If": []any{"Cond", map[string]any{"Ref": "Y"}, map[string]any{"Ref": "AWS::NoValue"}}},
		"e": map[string]any{"Fn::Select": []any{2, map[string]any{"Fn::Split": []any{"/", map[string]any{"Fn::GetAtt": []any{"U", "FunctionUrl"}}}}}},
		"f": map[string]any{"Ref": "X"},
		"g": 7,
		"h": "7",
		"i": true,
	}
	if got := fmt.Sprint(v); got != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if fmt.Sprint(v.(map[string]any)["a"]) != fmt.Sprint(v.(map[string]any)["f"]) {
		t.Fatal("short and long forms differ")
	}
}

func TestMergeGlobals(t *testing.T) {
	t.Parallel()
	tpl := map[string]any{
		"Globals": map[string]any{"Function": map[string]any{
			"Runtime": "provided.al2023", "Timeout": 10, "Layers": []any{"g"},
			"Environment": map[string]any{"Variables": map[string]any{"A": "global", "B": "global"}},
		}},
		"Resources": map[string]any{"F": map[string]any{
			"Type": "AWS::Serverless::Function",
			"Properties": map[string]any{
				"Timeout": 30, "Layers": []any{"l"},
				"Environment": map[string]any{"Variables": map[string]any{"B": "local"}},
			},
		}},
	}
	mergeGlobals(tpl)
	props := tpl["Resources"].(map[string]any)["F"].(map[string]any)["Properties"]
	want := map[string]any{
		"Runtime": "provided.al2023", "Timeout": 30, "Layers": []any{"g", "l"},
		"Environment": map[string]any{"Variables": map[string]any{"A": "global", "B": "local"}},
	}
	if fmt.Sprint(props) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", props, want)
	}
}
