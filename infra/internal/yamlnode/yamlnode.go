// Package yamlnode reads CloudFormation templates as yaml.v3 nodes, where
// the short-form tags (!Ref, !Sub, ...) that a decode into Go values loses
// are kept.
package yamlnode

import "gopkg.in/yaml.v3"

// Value is the value under key in the mapping n, or nil when n is not a
// mapping or has no such key.
func Value(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
