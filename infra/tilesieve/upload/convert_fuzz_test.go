package upload

import (
	"encoding/json"
	"testing"
)

// FuzzArchiveMetadata: whatever a metadata.json or metadata table holds,
// the conversion's metadata mapping returns an error or a JSON object
// without the fields the header carries, and numbers that are numbers.
func FuzzArchiveMetadata(f *testing.F) {
	f.Add([]byte(`{"name":"n","bounds":"-180,-85,180,85","center":"0,0,2","json":"{\"vector_layers\":[]}"}`))
	f.Add([]byte(`{"bounds":[1,2,3,4],"center":[1,2],"format":"png","minzoom":"0"}`))
	f.Add([]byte(`{"json":"[]"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var raw map[string]json.RawMessage
		if json.Unmarshal(in, &raw) != nil || raw == nil {
			return
		}
		meta, bounds, center, err := archiveMetadata(raw, "x")
		if err != nil {
			return
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal(meta, &out); err != nil || out == nil {
			t.Fatalf("metadata %s: not a JSON object: %v", meta, err)
		}
		for _, k := range headerKeys {
			if _, ok := out[k]; ok {
				t.Errorf("metadata %s keeps %s, which the header carries", meta, k)
			}
		}
		if bounds != nil && (bounds[0] < -180 || bounds[2] > 180 || bounds[1] < -90 || bounds[3] > 90) {
			t.Errorf("bounds %v outside the world", *bounds)
		}
		if center != nil {
			for _, v := range center {
				if v != v {
					t.Errorf("center %v: NaN", *center)
				}
			}
		}
	})
}
