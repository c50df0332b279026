package tiers

// SetDiskWriteHook makes every fill call fn just before it writes its disk
// file (outside the guard), so a test can land a purge there.
func SetDiskWriteHook(e *Engine, fn func(key string)) { e.diskWriteHook = fn }
