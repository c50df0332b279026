package jsonspan

import (
	"slices"
	"testing"
)

func TestMembersAndElements(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		start int
		array bool
		want  []string // key=value of each span
		err   bool
	}{
		{"object", `{"a": 1, "b" :{"c":[2]} ,"d":"x"}`, 0, false, []string{`a=1`, `b={"c":[2]}`, `d="x"`}, false},
		{"empty object", ` {} `, 0, false, nil, false},
		{"array", `[1, {"a":2},"s" ]`, 0, true, []string{`=1`, `={"a":2}`, `="s"`}, false},
		{"nested object", `{"a":{"b":true}}`, 5, false, []string{`b=true`}, false},
		{"nested array", `{"a":[ 3 ,4]}`, 5, true, []string{`=3`, `=4`}, false},
		{"not JSON", `{"a":`, 0, false, nil, true},
		{"array for object", `[1]`, 0, false, nil, true},
		{"object for array", `{"a":1}`, 0, true, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := []byte(tt.doc)
			list := Members
			if tt.array {
				list = Elements
			}
			spans, err := list(doc, tt.start)
			if (err != nil) != tt.err {
				t.Fatalf("got error %v, want error %v", err, tt.err)
			}
			var got []string
			for _, s := range spans {
				got = append(got, s.Key+"="+string(doc[s.Start:s.End]))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
