package yamlnode

import (
	"testing"

	"gopkg.in/yaml.v3"
)

func TestValue(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("a: 1\nb: !Ref X\nlist: [a]\n"), &doc); err != nil {
		t.Fatal(err)
	}
	top := doc.Content[0]
	tests := []struct {
		name string
		n    *yaml.Node
		key  string
		want string // "" for nil, else tag=value
	}{
		{"scalar", top, "a", "!!int=1"},
		{"short-form tag kept", top, "b", "!Ref=X"},
		{"missing key", top, "c", ""},
		{"key of a value, not a key", top, "1", ""},
		{"not a mapping", Value(top, "list"), "a", ""},
		{"nil node", nil, "a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if v := Value(tt.n, tt.key); v != nil {
				got = v.Tag + "=" + v.Value
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
