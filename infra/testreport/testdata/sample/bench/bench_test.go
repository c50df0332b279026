// Package bench has a benchmark that logs.
package bench

import "testing"

func BenchmarkSum(b *testing.B) {
	b.Log("logging from a benchmark")
	s := 0
	for i := 0; i < b.N; i++ {
		s += i
	}
	_ = s
}

func TestQuick(t *testing.T) {}
