// Package notests has no test files.
package notests

func F() int { return 1 }
